//! Persistence: the sqlx pool, embedded migrations and the repositories.

mod access;
mod approvals;
mod events;
mod feedback;
mod memories;
mod memory_fts;
mod schedules;
mod session_state;
mod sessions;
mod tasks;
mod turns;
mod usage;

pub use access::PairingCode;
pub use approvals::{ApprovalRecord, ApprovalRule, ApprovalStatus};
pub use events::SystemEvent;
pub use feedback::FeedbackRecord;
pub use memories::{MemoryKind, MemoryOwner, MemoryRecord, NewMemory};
pub use schedules::ScheduleRecord;
pub use session_state::{IdleSession, SessionState, StateDoc};
pub use sessions::{SessionId, SessionKey};
pub use tasks::{TaskRecord, TaskStatus};
pub use turns::{TurnOrigin, TurnState};

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// A persistence failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database at {path}: {reason}; check that the directory exists and is writable, or set DATABASE_URL")]
    Open { path: String, reason: String },
    #[error("unsupported DATABASE_URL {0:?}: use sqlite://path/to/file.db")]
    UnsupportedUrl(String),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// The database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
}

impl Store {
    /// Opens (creating if needed) the database at `url` and runs migrations.
    pub async fn open(url: &str) -> Result<Store, StoreError> {
        let store = Store::connect(url).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Opens without migrating (for `switchboard migrate` and `doctor`).
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        let Some(path) = sqlite_path(url) else {
            return Err(StoreError::UnsupportedUrl(url.to_owned()));
        };
        let open_err = |reason: String| StoreError::Open { path: path.display().to_string(), reason };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        }
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| open_err(e.to_string()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .map_err(|e| open_err(e.to_string()))?;
        Ok(Store { pool })
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        sqlx::migrate!("./migrations/sqlite").run(&self.pool).await?;
        Ok(())
    }

    /// A cheap round trip, for health checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The file path of a `sqlite:` URL (`sqlite://rel/path.db`, `sqlite:///abs.db`, `sqlite::memory:`).
fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let file = rest.split('?').next().unwrap_or(rest);
    Some(if file == ":memory:" { PathBuf::new() } else { Path::new(file).to_path_buf() })
}

pub(crate) fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}

#[cfg(test)]
pub(crate) async fn test_store() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    (Store::open(&url).await.unwrap(), dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sqlite_urls() {
        assert_eq!(sqlite_path("sqlite://./data/x.db"), Some(PathBuf::from("./data/x.db")));
        assert_eq!(sqlite_path("sqlite:///tmp/x.db?mode=rwc"), Some(PathBuf::from("/tmp/x.db")));
        assert_eq!(sqlite_path("postgres://localhost/test"), None);
    }

    #[tokio::test]
    async fn an_unwritable_location_gives_a_clear_error() {
        // The parent "directory" is a regular file: unwritable even for root,
        // which ignores permission bits on a read-only directory.
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("not-a-dir");
        std::fs::write(&blocker, "x").unwrap();
        let url = format!("sqlite://{}", blocker.join("x.db").display());
        let err = Store::open(&url).await.unwrap_err().to_string();
        assert!(err.contains("cannot open the database") && err.contains("DATABASE_URL"), "{err}");
    }
}
