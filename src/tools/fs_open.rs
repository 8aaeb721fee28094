//! Opening workspace files so that what is opened is what was checked.
//!
//! [`Workspace::resolve`](super::Workspace::resolve) confines the *path*; this
//! confines the *file*. Files are opened from the view's root down without
//! following any symlink (`beneath`: a link planted on the way after the path
//! was resolved is refused, not followed) and without blocking, then checked
//! on the open descriptor:
//!
//! - only regular files: a FIFO, socket or device in the workspace would block
//!   the session (a FIFO without a writer never returns) or read the machine;
//! - hard links: a file whose link count says it has names outside the
//!   caller's view (`ln /etc/passwd ws/p`) is the outside file, so it is
//!   refused unless every one of its links is found inside the view.
//!
//! Writes open without truncating and truncate only after the checks, so a
//! refused hard link is never emptied.

use super::fs_error::io_failure;
use super::{ToolError, Workspace};
use crate::workspace::beneath::{BeneathError, How};
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many directory entries the link search looks at before giving up (and
/// refusing): a workspace bigger than this gets no benefit of the doubt.
const MAX_LINK_SEARCH_ENTRIES: usize = 200_000;

/// How a workspace file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    /// Create if missing (with its parent directories); replace (`append:
    /// false`) or append to the content.
    Write {
        append: bool,
    },
}

/// Opens `path` (from `ws.resolve`) for `access` and checks the open file.
/// Runs blocking calls: call it from `spawn_blocking`.
pub(super) fn open_checked(
    ws: &Workspace,
    path: &Path,
    shown: &str,
    access: Access,
) -> Result<(File, Metadata), ToolError> {
    let how = match access {
        Access::Read => How::Read,
        Access::Write { append } => How::Write { append },
    };
    let file = ws
        .open_root()
        .and_then(|dir| dir.open_file(ws.relative(path), how, how != How::Read))
        .map_err(|e| open_failure(shown, e))?;
    let meta = file.metadata().map_err(|e| io_failure(shown, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "`{shown}` is a directory; use a file inside it (list it with exec_command `ls`)"
        )));
    }
    if !meta.is_file() {
        return Err(not_regular(shown));
    }
    if meta.nlink() > 1 && !all_links_inside(ws.root(), &meta) {
        return Err(ToolError::Forbidden(format!(
            "`{shown}` is a hard link to a file that also has names outside {}; the file \
             tools only use files that live there",
            if ws.is_user_folder() {
                "your workspace folder"
            } else {
                "the workspace"
            }
        )));
    }
    if access == (Access::Write { append: false }) {
        file.set_len(0).map_err(|e| io_failure(shown, &e))?;
    }
    Ok((file, meta))
}

fn not_regular(shown: &str) -> ToolError {
    ToolError::Forbidden(format!(
        "`{shown}` is not a regular file (a FIFO, socket or device); the file tools only \
         read and write regular files"
    ))
}

/// The refusal of a file that could not be opened beneath the view.
pub(super) fn open_failure(shown: &str, e: BeneathError) -> ToolError {
    match e {
        // A symlink on the way, or as the file itself (planted after the path
        // was resolved): never followed.
        BeneathError::Link(at) => ToolError::Forbidden(format!(
            "`{}` is a symbolic link; the file tools do not follow it",
            at.display()
        )),
        BeneathError::NotDir(at) => {
            ToolError::failed(format!("`{}` is not a directory", at.display()))
        }
        BeneathError::Outside(_) => {
            ToolError::Forbidden(format!("`{shown}` is outside the workspace"))
        }
        BeneathError::Io { source, .. } => {
            match source
                .raw_os_error()
                .map(rustix::io::Errno::from_raw_os_error)
            {
                // O_WRONLY|O_NONBLOCK on a FIFO nobody reads.
                Some(rustix::io::Errno::NXIO) => not_regular(shown),
                _ => io_failure(shown, &source),
            }
        }
    }
}

/// Whether every link of the file `meta` describes is a name inside `root`.
fn all_links_inside(root: &Path, meta: &Metadata) -> bool {
    let wanted = meta.nlink();
    let (dev, ino) = (meta.dev(), meta.ino());
    let mut found = 0u64;
    let mut seen = 0usize;
    let mut pending: Vec<PathBuf> = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_LINK_SEARCH_ENTRIES {
                return false;
            }
            let Ok(m) = entry.metadata() else { continue };
            if m.is_dir() {
                // Links cannot cross filesystems: other devices need no search.
                if m.dev() == dev {
                    pending.push(entry.path());
                }
            } else if m.dev() == dev && m.ino() == ino {
                found += 1;
                if found >= wanted {
                    return true;
                }
            }
        }
    }
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_link_swapped_in_after_the_path_was_resolved_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        let ws = Workspace::new(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(ws.root().join("a")).unwrap();
        let new = ws.resolve("a/new.txt").unwrap();
        let secret = ws.resolve("a/secret").unwrap();
        // A command swaps the directory for a link between the check and the use.
        std::fs::remove_dir(ws.root().join("a")).unwrap();
        symlink(&outside, ws.root().join("a")).unwrap();
        let write = open_checked(&ws, &new, "a/new.txt", Access::Write { append: false });
        let read = open_checked(&ws, &secret, "a/secret", Access::Read);
        for err in [write.unwrap_err(), read.unwrap_err()] {
            assert!(matches!(err, ToolError::Forbidden(_)), "{err}");
            assert!(err.for_model().contains("`a` is a symbolic link"), "{err}");
        }
        assert!(!outside.join("new.txt").exists());
    }
}
