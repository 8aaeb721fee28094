//! The Landlock ruleset of a command, prepared in the gateway before `fork`:
//! read and execute on the system directories, read on `/etc` without its
//! secrets, read-write on the workspace and the command's temp dir, nothing
//! else; TCP connect and bind denied when the network is off.

use super::Network;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetError, Scope, ABI,
};
use std::path::{Path, PathBuf};

/// The newest ABI this code asks for; older kernels enforce what they know
/// (the start-up check refuses what would matter, e.g. network rules before 4).
const ABI_USED: ABI = ABI::V7;

/// Programs and libraries: read and execute.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// Devices a shell needs, read and write.
const DEVICES_RW: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];
/// Devices read only.
const DEVICES_RO: &[&str] = &["/dev/urandom", "/dev/random"];
/// Directories whose entries are allowed one by one, so the secrets among
/// them can be left out (Landlock only allows; it cannot subtract).
const SPLIT: &[&str] = &["/etc", "/etc/ssh", "/etc/ssl", "/etc/security"];

/// Files under `/etc` a command never reads: password hashes, sudo rules,
/// host keys, private TLS keys, stored credentials.
pub(super) const SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/.pwd.lock",
];

/// Whether a command must not read `path` (see [`SECRETS`], and SSH host keys).
pub(super) fn is_secret(path: &Path) -> bool {
    if SECRETS.iter().any(|s| path == Path::new(s)) {
        return true;
    }
    path.parent() == Some(Path::new("/etc/ssh"))
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("ssh_host_"))
}

/// The paths of `/etc` (and the split directories below it) a command may read.
pub(super) fn etc_readable() -> Vec<PathBuf> {
    let mut out = Vec::new();
    split(Path::new("/etc"), &mut out);
    out
}

fn split(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if is_secret(&path) {
            continue;
        }
        if SPLIT.iter().any(|s| path == Path::new(s)) {
            split(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The rules every command shares, resolved once at start: directories are
/// opened then (they stay the same inode), files are reopened per command
/// (`/etc/resolv.conf` and friends are replaced by rename, and Landlock rules
/// follow the inode). Entries added to `/etc` later count after a restart.
pub(super) struct Base {
    dirs: Vec<(PathFd, BitFlags<AccessFs>)>,
    files: Vec<(PathBuf, BitFlags<AccessFs>)>,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base")
            .field("dirs", &self.dirs.len())
            .field("files", &self.files)
            .finish()
    }
}

impl Base {
    pub(super) fn new() -> Base {
        let read_exec = AccessFs::from_read(ABI_USED);
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        let device_rw = read | AccessFs::WriteFile | AccessFs::Truncate;
        let paths = SYSTEM
            .iter()
            .map(|p| (PathBuf::from(p), read_exec))
            .chain(etc_readable().into_iter().map(|p| (p, read)))
            .chain(std::iter::once((PathBuf::from("/proc"), read)))
            .chain(DEVICES_RW.iter().map(|p| (PathBuf::from(p), device_rw)))
            .chain(DEVICES_RO.iter().map(|p| (PathBuf::from(p), read)));
        let mut base = Base {
            dirs: Vec::new(),
            files: Vec::new(),
        };
        for (path, access) in paths {
            // Paths this system lacks (/lib32, /dev/tty in a container) are skipped.
            match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => {
                    if let Ok(fd) = PathFd::new(&path) {
                        base.dirs.push((fd, access));
                    }
                }
                Ok(_) => base
                    .files
                    .push((path, access & AccessFs::from_file(ABI_USED))),
                Err(_) => {}
            }
        }
        base
    }
}

/// The ruleset for one command: `base`, plus `readable` (read and execute)
/// and `writable` (everything).
pub(super) fn ruleset(
    base: &Base,
    network: Network,
    writable: &[&Path],
    readable: &[PathBuf],
) -> Result<RulesetCreated, RulesetError> {
    let all = AccessFs::from_all(ABI_USED);
    let mut ruleset = Ruleset::default()
        .handle_access(all)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    if network == Network::None {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)?;
    }
    let mut rs = ruleset.create()?;
    for (fd, access) in &base.dirs {
        (&mut rs).add_rule(PathBeneath::new(fd, *access))?;
    }
    for (path, access) in &base.files {
        if let Ok(fd) = PathFd::new(path) {
            (&mut rs).add_rule(PathBeneath::new(fd, *access))?;
        }
    }
    let extra = readable
        .iter()
        .map(|p| (p.as_path(), AccessFs::from_read(ABI_USED)))
        .chain(writable.iter().map(|p| (*p, all)));
    for (path, access) in extra {
        let Ok(fd) = PathFd::new(path) else { continue };
        let access = if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            access
        } else {
            access & AccessFs::from_file(ABI_USED)
        };
        (&mut rs).add_rule(PathBeneath::new(fd, access))?;
    }
    Ok(rs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised() {
        for p in [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/ssh/ssh_host_ed25519_key",
            "/etc/ssl/private",
        ] {
            assert!(is_secret(Path::new(p)), "{p}");
        }
        for p in ["/etc/passwd", "/etc/ssh/ssh_config", "/etc/ssl/certs"] {
            assert!(!is_secret(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn etc_is_listed_without_its_secrets() {
        let paths = etc_readable();
        assert!(paths.iter().all(|p| !is_secret(p)));
        assert!(!paths.iter().any(|p| p == Path::new("/etc")));
    }
}
