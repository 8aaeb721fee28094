//! Opening paths beneath a directory without following symbolic links.
//!
//! The gateway itself is not sandboxed, so whatever it opens in the
//! workspace must stay in the workspace even when a command has just planted
//! a link there (`ln -s /etc inbox/telegram-43`). Every component is opened
//! with `O_NOFOLLOW` from the directory down (`openat` one name at a time,
//! never `..`), missing directories are made with `mkdirat` in the directory
//! just opened, and the file itself is opened with `O_NOFOLLOW` too — the
//! per-component equivalent of `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//! that works on every kernel. A link anywhere on the way is refused, never
//! followed, and a swap between a check and the use changes nothing.

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// Why a path beneath a directory could not be opened. Paths are relative to
/// the directory the walk started from.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error("`{}` is a symbolic link, and links are not followed in the workspace", .0.display())]
    Link(PathBuf),
    #[error("`{}` is not a directory", .0.display())]
    NotDir(PathBuf),
    #[error("`{}` does not stay inside the workspace", .0.display())]
    Outside(PathBuf),
    #[error("`{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl BeneathError {
    /// The underlying I/O error kind (`NotFound`, `AlreadyExists`, …), if any.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            BeneathError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    fn io(path: &Path, errno: Errno) -> BeneathError {
        BeneathError::Io {
            path: path.to_path_buf(),
            source: io::Error::from(errno),
        }
    }
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    Read,
    /// Created if missing; appended to or written from the start (never
    /// truncated here: the caller truncates after its checks).
    Write {
        append: bool,
    },
    /// Created; fails with `AlreadyExists` when the name is taken (by
    /// anything, a link included).
    CreateNew,
}

/// An open directory to walk down from.
#[derive(Debug)]
pub(crate) struct Dir(OwnedFd);

impl Dir {
    /// Opens `path` itself (links in it are followed: it is the operator's
    /// configured, canonical workspace root).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(Dir(rfs::open(path, flags, Mode::empty())?))
    }

    /// The directory `rel` below this one, every component opened without
    /// following a link; missing ones are created when `create`.
    pub(crate) fn descend(&self, rel: &Path, create: bool) -> Result<Dir, BeneathError> {
        let mut walked = PathBuf::new();
        let mut current: Option<OwnedFd> = None;
        for name in names(rel)? {
            walked.push(name);
            let parent = current.as_ref().unwrap_or(&self.0);
            let next = open_dir_at(parent, name, &walked, create)?;
            current = Some(next);
        }
        match current {
            Some(fd) => Ok(Dir(fd)),
            None => Ok(Dir(self.0.try_clone().map_err(|e| BeneathError::Io {
                path: PathBuf::from("."),
                source: e,
            })?)),
        }
    }

    /// The file `rel` below this one opened for `how`, no link followed on
    /// the way or at the end; its missing parents are created when
    /// `create_parents`.
    pub(crate) fn open_file(
        &self,
        rel: &Path,
        how: How,
        create_parents: bool,
    ) -> Result<File, BeneathError> {
        let names = names(rel)?;
        let Some((last, parents)) = names.split_last() else {
            return Err(BeneathError::NotDir(PathBuf::from(".")));
        };
        let parent_rel: PathBuf = parents.iter().collect();
        let dir = self.descend(&parent_rel, create_parents)?;
        let common = OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
        let flags = match how {
            How::Read => OFlags::RDONLY | OFlags::NONBLOCK,
            How::Write { append: false } => OFlags::WRONLY | OFlags::CREATE | OFlags::NONBLOCK,
            How::Write { append: true } => {
                OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND | OFlags::NONBLOCK
            }
            How::CreateNew => OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
        } | common;
        match rfs::openat(&dir.0, *last, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => Ok(File::from(fd)),
            Err(Errno::LOOP) => Err(BeneathError::Link(rel.to_path_buf())),
            Err(e) => Err(BeneathError::io(rel, e)),
        }
    }
}

/// The plain names of `rel`; `.` is skipped, anything else (`..`, a root)
/// refused.
fn names(rel: &Path) -> Result<Vec<&OsStr>, BeneathError> {
    rel.components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(BeneathError::Outside(rel.to_path_buf())),
        })
        .collect()
}

/// Opens the directory `name` in `parent` without following a link (created
/// first when missing and `create`); `walked` names it in errors.
fn open_dir_at(
    parent: &OwnedFd,
    name: &OsStr,
    walked: &Path,
    create: bool,
) -> Result<OwnedFd, BeneathError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rfs::openat(parent, name, flags, Mode::empty()) {
        Ok(fd) => return Ok(fd),
        Err(Errno::NOENT) if create => {}
        Err(e @ (Errno::LOOP | Errno::NOTDIR)) => return Err(not_a_dir(parent, name, walked, e)),
        Err(e) => return Err(BeneathError::io(walked, e)),
    }
    match rfs::mkdirat(parent, name, Mode::from_raw_mode(0o777)) {
        // Made by someone else meanwhile: opened (and checked) below.
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(BeneathError::io(walked, e)),
    }
    rfs::openat(parent, name, flags, Mode::empty()).map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => not_a_dir(parent, name, walked, e),
        e => BeneathError::io(walked, e),
    })
}

/// What stands at `name` instead of a directory: a link, or something else.
fn not_a_dir(parent: &OwnedFd, name: &OsStr, walked: &Path, e: Errno) -> BeneathError {
    match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
            BeneathError::Link(walked.to_path_buf())
        }
        Ok(_) => BeneathError::NotDir(walked.to_path_buf()),
        Err(_) => BeneathError::io(walked, e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::symlink;

    #[test]
    fn creates_and_opens_below_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let top = Dir::open(&root).unwrap();

        let mut f = top
            .open_file(Path::new("a/b/c.txt"), How::CreateNew, true)
            .unwrap();
        f.write_all(b"hi").unwrap();
        let mut back = String::new();
        top.open_file(Path::new("./a/b/c.txt"), How::Read, false)
            .unwrap()
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, "hi");
        let taken = top
            .open_file(Path::new("a/b/c.txt"), How::CreateNew, false)
            .unwrap_err();
        assert_eq!(taken.io_kind(), Some(io::ErrorKind::AlreadyExists));

        // A link where a directory goes, and as the file itself.
        symlink(&outside, root.join("a/link")).unwrap();
        symlink(outside.join("f"), root.join("a/file-link")).unwrap();
        for (rel, create) in [("a/link/x", true), ("a/link/x", false)] {
            let e = top.open_file(Path::new(rel), How::CreateNew, create);
            assert!(matches!(e, Err(BeneathError::Link(ref p)) if p == Path::new("a/link")));
        }
        assert!(matches!(
            top.descend(Path::new("a/link"), true),
            Err(BeneathError::Link(_))
        ));
        assert!(matches!(
            top.open_file(Path::new("a/file-link"), How::Write { append: true }, false),
            Err(BeneathError::Link(_))
        ));
        assert!(matches!(
            top.descend(Path::new("a/b/c.txt"), false),
            Err(BeneathError::NotDir(_))
        ));
        for bad in ["../x", "/etc/passwd", "a/../../x"] {
            assert!(matches!(
                top.open_file(Path::new(bad), How::Read, false),
                Err(BeneathError::Outside(_))
            ));
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }
}
