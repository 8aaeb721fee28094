//! What commands see of `/etc`, at every level: an allow-list of the entries
//! programs need (name service, time, TLS, the dynamic linker, shells, common
//! tools' system-wide settings), never the rest — this gateway's env file,
//! other services' configuration and credentials — and within those entries
//! never the known secrets.

use std::path::{Path, PathBuf};

/// Entries of `/etc` commands may read, when present. Found by tracing what
/// `sh`, `ls`, `id`, `git`, `python3`, `pip`, `curl`, `node`, `npm`, `perl`,
/// `java` and `gcc` open, plus the settings of tools commonly run.
const ALLOWED: &[&str] = &[
    // Users, groups and name service.
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "resolv.conf",
    "gai.conf",
    "services",
    "protocols",
    "networks",
    "rpc",
    "netconfig",
    "ethertypes",
    "hostname",
    "shells",
    // The dynamic linker, SELinux state read by coreutils.
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ld.so.preload",
    "selinux",
    // Time and locale.
    "localtime",
    "timezone",
    "locale.alias",
    "locale.conf",
    // TLS and certificates (`ssl/private` is left out below).
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "gnutls",
    // Shells and terminals.
    "profile",
    "profile.d",
    "bash.bashrc",
    "bash_completion",
    "bash_completion.d",
    "inputrc",
    "terminfo",
    // Which program a command name runs.
    "alternatives",
    // System identity.
    "os-release",
    "lsb-release",
    "debian_version",
    "issue",
    // Tools' system-wide settings.
    "gitconfig",
    "gitattributes",
    "ssh",
    "mime.types",
    "magic",
    "magic.mime",
    "mailcap",
    "xattr.conf",
    "wgetrc",
    "pip.conf",
    "npmrc",
    "gemrc",
    "perl",
    "vim",
    "vimrc",
    "nanorc",
    "xdg",
    "fonts",
    "manpath.config",
    "groff",
    "sgml",
    "xml",
    "texmf",
    "ghostscript",
    "jvm",
    "maven",
    "krb5.conf",
    "matplotlibrc",
];

/// Entries allowed by prefix (versioned directories: `python3.11`,
/// `java-17-openjdk`, `ImageMagick-6`, `php`).
const ALLOWED_PREFIXES: &[&str] = &["python", "java-", "ImageMagick-", "php"];

/// Files under allowed entries a command never reads: private TLS keys, SSH
/// host keys (added by [`secrets`]); and the classic secrets of `/etc`,
/// denied also should an entry above ever hold them.
const SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/security/opasswd",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/krb5.keytab",
];

/// Whether `/etc/<name>` is on the allow-list.
pub(super) fn allowed(name: &str) -> bool {
    ALLOWED.contains(&name) || ALLOWED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The allowed entries present on this system (as `/etc/<name>`, links not
/// followed).
pub(super) fn entries() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc") else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(allowed))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The secrets: [`SECRETS`] and the SSH host keys present.
pub(super) fn secrets() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = SECRETS.iter().map(PathBuf::from).collect();
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        out.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| is_host_key(p)),
        );
    }
    out
}

fn is_host_key(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("ssh_host_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allow_list_keeps_what_programs_need_and_nothing_of_services() {
        for name in [
            "passwd",
            "resolv.conf",
            "ssl",
            "python3.11",
            "java-17-openjdk",
        ] {
            assert!(allowed(name), "{name}");
        }
        for name in [
            "shadow",
            "switchboard",
            "sudoers",
            "mysql",
            "postgresql",
            "environment",
            "credstore",
        ] {
            assert!(!allowed(name), "{name}");
        }
        assert!(entries().iter().all(|p| p.starts_with("/etc")));
        assert!(secrets().contains(&PathBuf::from("/etc/ssl/private")));
    }
}
