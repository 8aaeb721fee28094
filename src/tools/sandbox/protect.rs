//! The paths commands must not reach, resolved once at start (made absolute,
//! symlinks followed), and the split of an allowed directory around them:
//! Landlock can only allow, so a directory holding a denied path is allowed
//! entry by entry instead.

use std::path::{Component, Path, PathBuf};

/// The paths denied to commands: the configuration's protected paths and the
/// secrets of `/etc`, each as written (made absolute) and where it leads.
#[derive(Debug, Clone, Default)]
pub(super) struct Denied {
    paths: Vec<PathBuf>,
}

impl Denied {
    /// Resolves `protected` (relative paths against the current directory)
    /// and adds the secrets of `/etc`.
    pub(super) fn new(protected: &[PathBuf]) -> Denied {
        let mut paths: Vec<PathBuf> = Vec::new();
        let secrets = super::etc::secrets();
        for path in protected.iter().chain(&secrets) {
            let written = absolute(path);
            if let Ok(real) = std::fs::canonicalize(&written) {
                paths.push(real);
            }
            paths.push(written);
        }
        paths.sort();
        paths.dedup();
        Denied { paths }
    }

    /// Whether `path` is denied: it is, or lies inside, a denied path or a
    /// process's `/proc/<pid>` directory.
    pub(super) fn covers(&self, path: &Path) -> bool {
        is_process_dir(path) || self.paths.iter().any(|d| path.starts_with(d))
    }

    /// The denied paths strictly inside `dir` (`/proc` always has some: the
    /// processes' directories).
    pub(super) fn inside<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = &'a PathBuf> + 'a {
        self.paths
            .iter()
            .filter(move |d| d.as_path() != dir && d.starts_with(dir))
    }

    /// Whether `path` is itself one of the denied paths.
    pub(super) fn covers_exactly(&self, path: &Path) -> bool {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| absolute(path));
        self.paths.contains(&real)
    }

    fn any_inside(&self, dir: &Path) -> bool {
        dir == Path::new("/proc") || self.inside(dir).next().is_some()
    }
}

/// Whether `path` is, or lies inside, `/proc/<pid>` (a process's own files:
/// its command line, its environment, its descriptors).
pub(super) fn is_process_dir(path: &Path) -> bool {
    let mut parts = path.components();
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(Component::RootDir), Some(Component::Normal(proc)), Some(Component::Normal(pid)))
            if proc == "proc" && pid.to_str().is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    )
}

/// The parts of `root` to allow: `root` itself when nothing denied lies
/// inside it, else its entries, recursively, leaving the denied ones out.
/// `root` is allowed even inside a denied directory (the deeper path
/// decides: the workspace inside `DATA_DIR`). Symbolic links met while
/// splitting are left out, never followed: a link a command planted in the
/// workspace must not widen what the next command may reach (what a link
/// leads to is reachable only if it is allowed by itself).
pub(super) fn allowed_parts(root: &Path, denied: &Denied) -> Vec<PathBuf> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| absolute(root));
    let mut out = Vec::new();
    split(&root, denied, &mut out);
    out
}

fn split(dir: &Path, denied: &Denied, out: &mut Vec<PathBuf>) {
    if !denied.any_inside(dir) {
        out.push(dir.to_owned());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() || denied.covers(&path) {
            continue;
        }
        if kind.is_dir() {
            split(&path, denied, out);
        } else {
            out.push(path);
        }
    }
}

/// `path` made absolute against the current directory, `.` and `..`
/// resolved lexically (for paths that do not exist yet).
pub(super) fn absolute(path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::from("/");
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn process_directories_are_recognised() {
        for p in ["/proc/1", "/proc/4242/cmdline", "/proc/77/task/78/environ"] {
            assert!(is_process_dir(Path::new(p)), "{p}");
        }
        for p in [
            "/proc",
            "/proc/meminfo",
            "/proc/sys/kernel",
            "/etc/1",
            "/proc/self",
        ] {
            assert!(!is_process_dir(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn a_directory_is_split_around_what_it_holds_and_links_are_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(root.path()).unwrap();
        for d in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink("/", r.join("a/link")).unwrap();
        let denied = Denied::new(&[r.join("a/secret")]);
        let mut parts = allowed_parts(&r, &denied);
        parts.sort();
        assert_eq!(parts, [r.join("a/file"), r.join("a/open"), r.join("b")]);
        // Nothing inside: the directory whole; inside a denied one: itself.
        assert_eq!(allowed_parts(&r.join("b"), &denied), [r.join("b")]);
        let inner = Denied::new(std::slice::from_ref(&r));
        assert_eq!(allowed_parts(&r.join("b"), &inner), [r.join("b")]);
        assert!(inner.covers(&r.join("a/file")));
    }

    #[test]
    fn relative_paths_are_made_absolute_lexically() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(absolute(Path::new("data/../x")), cwd.join("x"));
        assert_eq!(absolute(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
