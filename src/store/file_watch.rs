//! Noticing a SQLite file deleted or replaced under the running gateway: the
//! open connections keep working on the old file, so nothing fails until a
//! restart opens an empty database and history and pending approvals are
//! gone. The identity (device + inode) of the file is remembered at open;
//! when the path no longer leads to it, the operator is told and the live
//! database is copied next to the path (`VACUUM INTO`) to be put back. The
//! copy is made through a connection opened with the store, which holds the
//! original file: one the pool opens later would open whatever is at the
//! path now.

use super::{Store, StoreError};
use sqlx::{AnyConnection, Connection, Executor};
use std::path::{Path, PathBuf};
use tokio::sync::Mutex;

/// The database file as it was opened.
#[derive(Debug)]
pub(crate) struct DbFile {
    path: PathBuf,
    id: FileId,
    /// A connection to the file as opened, kept for the copy (none when it
    /// could not be opened: the pool's is used then).
    witness: Mutex<Option<AnyConnection>>,
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
    /// The file at `path` (opened by `url`) as it is now; `None` when it
    /// cannot be read.
    pub(crate) async fn remember(path: &Path, url: &str) -> Option<DbFile> {
        let id = file_id(path).ok()??;
        let witness = match AnyConnection::connect(url).await {
            Ok(mut conn) => {
                // A copy waits out a writer rather than failing; the read
                // opens the write-ahead log and its index, which this
                // connection then holds too (a deleted `-wal` keeps what
                // was not checkpointed yet).
                let ready = conn
                    .execute("PRAGMA busy_timeout = 5000; SELECT count(*) FROM sqlite_master;")
                    .await;
                if let Err(e) = ready {
                    tracing::debug!(error = %e, "the connection kept for a rescue copy cannot read");
                }
                Some(conn)
            }
            Err(e) => {
                tracing::debug!(error = %e, "no connection kept for a rescue copy");
                None
            }
        };
        Some(DbFile {
            path: path.to_owned(),
            id,
            witness: Mutex::new(witness),
            rescued: Mutex::new(None),
        })
    }

    /// The database's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the path still leads to the file opened.
    pub(crate) fn is_in_place(&self) -> bool {
        self.state() == FileState::Present
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
        match self.vacuum_into(file, &copy).await {
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

    /// Writes a compact copy of the live database to `to` (a new file),
    /// through the connection kept on the file as opened.
    async fn vacuum_into(&self, file: &DbFile, to: &Path) -> Result<(), StoreError> {
        let to = to.to_str().ok_or_else(|| {
            StoreError::Corrupt(format!("copy path {} is not UTF-8", to.display()))
        })?;
        let vacuum = sqlx::query("VACUUM INTO $1").bind(to);
        match file.witness.lock().await.as_mut() {
            Some(conn) => vacuum.execute(conn).await?,
            None => vacuum.execute(&self.pool).await?,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.rescued-` copies next to `db`.
    fn copies(db: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(db.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".rescued-"))
            .collect()
    }

    #[tokio::test]
    async fn a_replaced_file_is_noticed_and_the_live_data_copied_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let store = Store::open(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        store
            .audit()
            .record("before.swap", serde_json::json!({}))
            .await;
        assert_eq!(store.check_file().await, FileState::Present);

        let other = dir.path().join("other.db");
        std::fs::write(&other, b"").unwrap();
        std::fs::rename(&other, &db).unwrap();
        assert_eq!(store.check_file().await, FileState::Replaced);
        assert_eq!(store.check_file().await, FileState::Replaced);
        let copies = copies(&db);
        assert_eq!(copies.len(), 1, "{copies:?}");

        let copy = Store::open(&format!("sqlite://{}", copies[0].display()))
            .await
            .unwrap();
        let kinds: Vec<String> = copy
            .audit()
            .recent(10)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert!(kinds.iter().any(|k| k == "before.swap"), "{kinds:?}");
    }

    #[tokio::test]
    async fn an_in_memory_database_has_no_file_to_watch() {
        let store = Store::open("sqlite::memory:").await.unwrap();
        assert_eq!(store.check_file().await, FileState::Present);
    }
}
