//! Opening workspace files so that what is opened is what was checked.
//!
//! [`Workspace::resolve`](super::Workspace::resolve) confines the *path*; this
//! confines the *file*. Files are opened without following a final symlink and
//! without blocking, then checked on the open descriptor:
//!
//! - only regular files: a FIFO, socket or device in the workspace would block
//!   the session (a FIFO without a writer never returns) or read the machine;
//! - hard links: a file whose link count says it has names outside the
//!   workspace (`ln /etc/passwd ws/p`) is the outside file, so it is refused
//!   unless every one of its links is found inside the workspace.
//!
//! Writes open without truncating and truncate only after the checks, so a
//! refused hard link is never emptied.

use super::ToolError;
use rustix::fs::OFlags;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How many directory entries the link search looks at before giving up (and
/// refusing): a workspace bigger than this gets no benefit of the doubt.
const MAX_LINK_SEARCH_ENTRIES: usize = 200_000;

/// How a workspace file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    /// Create if missing; replace (`append: false`) or append to the content.
    Write {
        append: bool,
    },
}

/// Opens `path` (inside `root`) for `access` and checks the open file. Runs
/// blocking calls: call it from `spawn_blocking`.
pub(super) fn open_checked(
    root: &Path,
    path: &Path,
    shown: &str,
    access: Access,
) -> Result<(File, Metadata), ToolError> {
    let mut options = OpenOptions::new();
    match access {
        Access::Read => options.read(true),
        Access::Write { append } => options.write(true).create(true).append(append),
    };
    let flags = OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY;
    options.custom_flags(flags.bits() as i32);
    let file = options.open(path).map_err(|e| open_failure(shown, &e))?;
    let meta = file.metadata().map_err(|e| open_failure(shown, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "`{shown}` is a directory; use a file inside it (list it with exec_command `ls`)"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Forbidden(format!(
            "`{shown}` is not a regular file (a FIFO, socket or device); the file tools only \
             read and write regular files"
        )));
    }
    if meta.nlink() > 1 && !all_links_inside(root, &meta) {
        return Err(ToolError::Forbidden(format!(
            "`{shown}` is a hard link to a file that also has names outside the workspace; \
             the file tools only use files that live in the workspace"
        )));
    }
    if access == (Access::Write { append: false }) {
        file.set_len(0).map_err(|e| open_failure(shown, &e))?;
    }
    Ok((file, meta))
}

fn open_failure(shown: &str, e: &io::Error) -> ToolError {
    match e.raw_os_error().map(rustix::io::Errno::from_raw_os_error) {
        // O_NOFOLLOW on a symlink that appeared after the path was resolved.
        Some(rustix::io::Errno::LOOP) => ToolError::Forbidden(format!(
            "`{shown}` is a symbolic link; the file tools do not follow it"
        )),
        // O_WRONLY|O_NONBLOCK on a FIFO nobody reads.
        Some(rustix::io::Errno::NXIO) => ToolError::Forbidden(format!(
            "`{shown}` is not a regular file (a FIFO, socket or device); the file tools only \
             read and write regular files"
        )),
        _ => super::fs::io_failure(shown, e),
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
