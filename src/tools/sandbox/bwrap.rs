//! The Bubblewrap level: the command runs in new mount, PID and IPC
//! namespaces that see the system directories read-only, `/etc` without its
//! secrets, the workspace read-write and a private `/tmp`; without a network
//! namespace of its own only when the network is allowed.

use super::landlock::{is_secret, SECRETS};
use super::Network;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];
/// Directories under `/etc` whose secrets are hidden file by file.
const SECRET_DIRS: &[&str] = &["/etc/ssh"];

/// `bwrap` arguments that run `program args` confined, in `workspace`.
pub(super) fn argv(
    network: Network,
    workspace: &Path,
    readable: &[PathBuf],
    program: &OsString,
    args: &[OsString],
) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |items: &[&dyn AsRef<std::ffi::OsStr>]| {
        a.extend(items.iter().map(|i| i.as_ref().to_os_string()));
    };
    for dir in SYSTEM {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    push(&[&"--symlink", &target, &path]);
                }
            }
            Ok(_) => push(&[&"--ro-bind", &path, &path]),
            Err(_) => {}
        }
    }
    // Secrets under /etc: an empty file or directory mounted over each.
    for secret in secrets() {
        if secret.is_dir() {
            push(&[&"--tmpfs", &secret]);
        } else {
            push(&[&"--ro-bind", &"/dev/null", &secret]);
        }
    }
    push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp"]);
    for p in readable {
        push(&[&"--ro-bind", p, p]);
    }
    push(&[&"--bind", &workspace, &workspace, &"--chdir", &workspace]);
    push(&[
        &"--unshare-pid",
        &"--unshare-ipc",
        &"--unshare-uts",
        &"--die-with-parent",
        &"--new-session",
        &"--cap-drop",
        &"ALL",
        &"--setenv",
        &"TMPDIR",
        &"/tmp",
    ]);
    if network == Network::None {
        push(&[&"--unshare-net"]);
    }
    push(&[&"--", program]);
    a.extend(args.iter().cloned());
    a
}

/// The secrets present on this system.
fn secrets() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = SECRETS
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect();
    for dir in SECRET_DIRS {
        if let Ok(entries) = std::fs::read_dir(dir) {
            out.extend(entries.flatten().map(|e| e.path()).filter(|p| is_secret(p)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_off_unshares_it_and_the_program_comes_last() {
        let full = argv(
            Network::None,
            Path::new("/w"),
            &[],
            &"sh".into(),
            &["-c".into(), "true".into()],
        );
        let text: Vec<String> = full
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(text.contains(&"--unshare-net".to_owned()));
        assert!(text.contains(&"--die-with-parent".to_owned()));
        let sep = text.iter().position(|a| a == "--").unwrap_or(0);
        assert_eq!(&text[sep + 1..], ["sh", "-c", "true"]);
        let allowed = argv(Network::Allow, Path::new("/w"), &[], &"sh".into(), &[]);
        assert!(!allowed.iter().any(|a| a == "--unshare-net"));
    }
}
