//! The Bubblewrap level: the command runs in new mount, PID and IPC
//! namespaces that see the system directories read-only, the allowed entries
//! of `/etc`, the workspace read-write and a private `/tmp` — with every
//! protected path inside those hidden under an empty file or directory —
//! and without a network namespace of its own only when the network is
//! allowed. Its seccomp filter is handed to `bwrap` (`--seccomp FD`), which
//! installs it just before it runs the command.

use super::protect::Denied;
use super::Network;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What a command under bwrap sees.
pub(super) struct View<'a> {
    pub network: Network,
    pub workspace: &'a Path,
    pub readable: &'a [PathBuf],
    pub denied: &'a Denied,
    /// The descriptor `bwrap` reads the seccomp filter from.
    pub seccomp_fd: Option<i32>,
}

/// Collects the arguments; read-only remounts go last, once every mount
/// point below them exists.
struct Args {
    out: Vec<OsString>,
    remount: Vec<PathBuf>,
    /// Files bwrap copies into the sandbox (`--file FD DEST`).
    files: Vec<std::fs::File>,
}

impl Args {
    fn push(&mut self, items: &[&dyn AsRef<OsStr>]) {
        self.out
            .extend(items.iter().map(|i| i.as_ref().to_os_string()));
    }

    /// Binds `source` at `dest` (read-only unless `write`), then hides every
    /// denied path inside it.
    fn bind(&mut self, source: &Path, dest: &Path, write: bool, denied: &Denied) {
        let flag = if write { "--bind" } else { "--ro-bind" };
        self.push(&[&flag, &source, &dest]);
        let inside: Vec<&PathBuf> = denied.inside(source).collect();
        // Hiding a directory hides what it holds.
        let hidden: Vec<PathBuf> = inside
            .iter()
            .filter(|p| !inside.iter().any(|q| p != &q && p.starts_with(q)))
            .map(|p| (*p).clone())
            .collect();
        for path in hidden {
            match std::fs::symlink_metadata(&path) {
                // A link is hidden where it leads (that path is denied too).
                Ok(m) if m.file_type().is_symlink() => {}
                Ok(m) if m.is_dir() => {
                    self.push(&[&"--tmpfs", &path]);
                    self.remount.push(path);
                }
                Ok(_) => self.push(&[&"--ro-bind", &"/dev/null", &path]),
                Err(_) => {}
            }
        }
    }
}

/// `bwrap` arguments that run `program args` confined, in the workspace,
/// and the files the child must hand on (each named by `--file FD`).
pub(super) fn argv(
    view: &View<'_>,
    program: &OsString,
    args: &[OsString],
) -> (Vec<OsString>, Vec<std::fs::File>) {
    let mut a = Args {
        out: Vec::new(),
        remount: Vec::new(),
        files: Vec::new(),
    };
    for dir in SYSTEM {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    a.push(&[&"--symlink", &target, &path]);
                }
            }
            Ok(_) => a.bind(path, path, false, view.denied),
            Err(_) => {}
        }
    }
    etc(&mut a, view.denied);
    a.push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp"]);
    let workspace = std::fs::canonicalize(view.workspace).unwrap_or(view.workspace.into());
    a.bind(&workspace, &workspace, true, view.denied);
    for p in view.readable {
        let p = std::fs::canonicalize(p).unwrap_or(p.clone());
        a.bind(&p, &p, false, view.denied);
    }
    for path in std::mem::take(&mut a.remount) {
        a.push(&[&"--remount-ro", &path]);
    }
    // The root itself (where bwrap made /etc and the mount points) too.
    a.push(&[&"--remount-ro", &"/", &"--chdir", &workspace]);
    a.push(&[
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
    if view.network == Network::None {
        a.push(&[&"--unshare-net"]);
    }
    if let Some(fd) = view.seccomp_fd {
        a.push(&[&"--seccomp", &fd.to_string()]);
    }
    a.push(&[&"--", program]);
    a.out.extend(args.iter().cloned());
    (a.out, a.files)
}

/// The allowed entries of `/etc`, each where it is: a directory bound, a
/// file copied in (`--file`: no mount, which costs about a millisecond
/// each); an entry that is a link gets what it leads to (`resolv.conf` into
/// /run), unless that is denied or holds something denied.
fn etc(a: &mut Args, denied: &Denied) {
    for entry in super::etc::entries() {
        let Ok(target) = std::fs::canonicalize(&entry) else {
            continue;
        };
        if denied.covers(&target) {
            continue;
        }
        if target.is_dir() {
            let is_link = target != entry;
            if !(is_link && denied.inside(&target).next().is_some()) {
                a.bind(&target, &entry, false, denied);
            }
        } else if let Ok(file) = std::fs::File::open(&target) {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
            a.push(&[&"--file", &fd.to_string(), &entry]);
            a.files.push(file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(view: &View<'_>, program: &str, args: &[&str]) -> Vec<String> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        argv(view, &program.into(), &args)
            .0
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn network_off_unshares_it_and_the_program_comes_last() {
        let denied = Denied::default();
        let mut view = View {
            network: Network::None,
            workspace: Path::new("/w"),
            readable: &[],
            denied: &denied,
            seccomp_fd: Some(7),
        };
        let full = text(&view, "sh", &["-c", "true"]);
        assert!(full.contains(&"--unshare-net".to_owned()));
        assert!(full.contains(&"--die-with-parent".to_owned()));
        assert!(full.windows(2).any(|w| w == ["--seccomp", "7"]));
        let sep = full.iter().position(|a| a == "--").unwrap_or(0);
        assert_eq!(&full[sep + 1..], ["sh", "-c", "true"]);
        view.network = Network::Allow;
        let allowed = text(&view, "sh", &[]);
        assert!(!allowed.iter().any(|a| a == "--unshare-net"));
        // /etc is never bound whole, and never its secrets.
        assert!(!allowed.windows(2).any(|w| w == ["--ro-bind", "/etc"]));
        assert!(!allowed.iter().any(|a| a == "/etc/shadow"));
    }
}
