//! Noticing a SQLite file deleted or replaced under the running gateway: the
//! open connections keep working on the old file, so nothing fails until a
//! restart opens an empty database and history and pending approvals are
//! gone. The identity (device + inode) of the file is remembered at open;
//! when the path no longer leads to it, the operator is told and the live
//! database is copied next to the path (`VACUUM INTO`) to be put back.

use super::{Store, StoreError};
use std::path::{Path, PathBuf};
use tokio::sync::Mutex;

/// The database file as it was opened.
#[derive(Debug)]
pub(crate) struct DbFile {
    path: PathBuf,
    id: FileId,
    /// The copy made once the file was found gone.
    rescued: Mutex<Option<PathBuf>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

/// What is at the database's path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// The file this process opened (or not a file database).
    Present,
    /// Nothing: the file was deleted while the gateway runs.
    Deleted,
    /// Another file: it was replaced while the gateway runs.
    Replaced,
}

impl FileState {
    /// As shown by `/healthz`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileState::Present => "ok",
            FileState::Deleted => "deleted",
            FileState::Replaced => "replaced",
        }
    }
}

impl DbFile {
    /// The file at `path` as it is now; `None` when it cannot be read.
    pub(crate) fn remember(path: &Path) -> Option<DbFile> {
        let id = file_id(path).ok()??;
        Some(DbFile {
            path: path.to_owned(),
            id,
            rescued: Mutex::new(None),
        })
    }

    fn state(&self) -> FileState {
        match file_id(&self.path) {
            Ok(Some(id)) if id == self.id => FileState::Present,
            Ok(Some(_)) => FileState::Replaced,
            Ok(None) => FileState::Deleted,
            // Unreadable (a permission problem): not evidence of a swap.
            Err(_) => FileState::Present,
        }
    }
}

/// `Ok(None)` when nothing is at `path`.
fn file_id(path: &Path) -> std::io::Result<Option<FileId>> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(FileId {
            dev: m.dev(),
            ino: m.ino(),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl Store {
    /// Whether the database file is still the one this process opened. The
    /// first time it is not, logs an error for the operator and copies the
    /// live database next to the path (once).
    pub async fn check_file(&self) -> FileState {
        let Some(file) = &self.file else {
            return FileState::Present;
        };
        let state = file.state();
        if state == FileState::Present {
            return state;
        }
        // Held across the copy: concurrent checks make one copy.
        let mut rescued = file.rescued.lock().await;
        if rescued.is_none() {
            *rescued = self.rescue(file, state).await;
        }
        state
    }

    /// Copies the live database next to the file's path; the copy's path.
    async fn rescue(&self, file: &DbFile, state: FileState) -> Option<PathBuf> {
        let name = file
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "switchboard.db".into());
        let copy = file
            .path
            .with_file_name(format!("{name}.rescued-{}", super::now()));
        match self.vacuum_into(&copy).await {
            Ok(()) => {
                tracing::error!(
                    path = %file.path.display(),
                    copy = %copy.display(),
                    "the database file was {} while the gateway runs; its live data was copied: stop the gateway, move the copy to the database path, then start it again (a start on the path as it is now loses history and pending approvals)",
                    state.as_str()
                );
                Some(copy)
            }
            Err(e) => {
                tracing::error!(
                    path = %file.path.display(),
                    error = %e,
                    "the database file was {} while the gateway runs and its live data could not be copied; do not restart before restoring it from a backup",
                    state.as_str()
                );
                None
            }
        }
    }

    /// Writes a compact copy of the live database to `to` (a new file).
    async fn vacuum_into(&self, to: &Path) -> Result<(), StoreError> {
        let to = to.to_str().ok_or_else(|| {
            StoreError::Corrupt(format!("copy path {} is not UTF-8", to.display()))
        })?;
        sqlx::query("VACUUM INTO $1")
            .bind(to)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
