//! Persistence: the sqlx pool, embedded migrations and the repositories.

mod access;
mod approvals;
mod approvals_pending;
mod backoff;
mod caps;
mod chat_parents;
mod chat_settings;
mod checkins;
mod console;
mod console_lists;
mod events;
mod feedback;
mod file_watch;
mod grown_tools;
mod history;
mod history_search;
mod identity;
mod inbox;
mod liveness;
mod media;
mod memories;
mod memory_fts;
mod memory_gc;
mod memory_learn;
mod memory_terms;
mod memory_vectors;
mod message_vectors;
mod models;
mod outbox;
mod pairing_notice;
mod plans;
mod portfolio;
mod profile_suggestions;
mod reasoning_notes;
mod recycle;
mod reflection;
mod resumes;
mod role_notes;
mod schedules;
mod seen;
mod session_state;
mod sessions;
mod stats;
mod tasks;
mod turns;
mod usage;
mod user_identity;
mod voice_settings;
mod web_sessions;

pub use crate::domain::Conversation;
pub use access::{AdmittedUser, PairingCode};
pub use approvals::{ApprovalRecord, ApprovalRule, ApprovalStatus, Approvals};
pub(crate) use backoff::Backoff;
pub use caps::Admission;
pub use checkins::CheckinSettings;
pub use console::{
    Activity, EventFilter, HistoryRow, ProcessRow, SessionFilter, SessionRow, Slice,
};
pub use console_lists::{OwnedMemory, UsageDay};
pub use events::{Audit, SystemEvent};
pub use feedback::{FeedbackRecord, Rated};
pub use file_watch::FileState;
pub use grown_tools::{GrownKind, GrownStamp, GrownToolRow};
pub use history::History;
pub use history_search::HistoryWindow;
pub use identity::{IdentityVersion, NewIdentityVersion};
pub use inbox::{Inbox, InboxEntry, Intake, Keep};
pub use liveness::LivenessClaim;
pub use media::{MediaFile, MediaFiles, MediaOrigin};
pub use memories::{Memories, MemoryKind, MemoryOwner, MemoryRecord, NewMemory};
pub use memory_gc::GcCandidate;
pub use memory_learn::MemoryStats;
pub use memory_vectors::{EmbeddingProgress, StoredVector, Unembedded, VectorCursor};
pub use message_vectors::{MessageVector, QueuedMessage};
pub use models::{ModelRow, Prices};
pub use outbox::{AnsweredQuestion, Outbox, OutboxEntry, OutboxKind, OutboxRequest, OutboxStatus};
pub use pairing_notice::ApprovedPairing;
pub use plans::Plans;
pub use portfolio::{PortfolioError, TradeRecord};
pub use profile_suggestions::{
    fingerprint as suggestion_fingerprint, ProfileSuggestion, SuggestionStatus, Suggestions,
};
pub use reasoning_notes::{ReasoningNote, ReasoningNotes, REASONING_KEPT_DAYS};
pub use resumes::InterruptedResume;
pub use role_notes::{RoleNote, RoleNotes, ROLE_NOTES_KEPT};
pub use schedules::{ClaimedOccurrence, OccurrencePlan, ScheduleRecord, Schedules};
pub use session_state::{IdleSession, SessionState, StateDoc};
pub use sessions::{SessionId, SessionKey, Sessions};
pub use stats::LiveCounts;
pub use tasks::{TaskNotify, TaskRecord, TaskStatus, Tasks};
pub use turns::{NestedTurn, PausedTurns, TurnContext, TurnState};
pub use usage::{ModelUsage, UsageLedger};

use file_watch::DbFile;
use recycle::Recycle;
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Executor};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A persistence failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database at {path}: {reason}; check that it exists and is reachable (or writable), or set DATABASE_URL")]
    Open { path: String, reason: String },
    #[error(
        "unsupported DATABASE_URL {0:?}: use sqlite://path/to/file.db or postgres://user@host/db"
    )]
    UnsupportedUrl(String),
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// Which database a store talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded, one file: the default.
    Sqlite,
    /// Shared by several gateway processes.
    Postgres,
}

/// The database. Cheap to clone. One interface over SQLite and PostgreSQL:
/// its repositories (`store.tasks()`, `store.outbox()`, `store.audit()`, …)
/// are small handles borrowing it, one per aggregate, each with the methods
/// its callers need; the SQL stays in this module.
/// queries are portable SQL with `$N` placeholders, times are epoch
/// milliseconds, and the few backend-specific statements branch on
/// [`Store::backend`].
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// Which pooled connections [`Store::recover`] retired.
    recycle: Arc<Recycle>,
    /// The SQLite file as opened (none for PostgreSQL or in memory).
    file: Option<Arc<DbFile>>,
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
        sqlx::any::install_default_drivers();
        let recycle = Arc::new(Recycle::default());
        let retired = Arc::clone(&recycle);
        let options = AnyPoolOptions::new().before_acquire(move |_conn, meta| {
            let keep = !retired.is_stale(meta.age);
            Box::pin(async move { Ok(keep) })
        });
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = options
                .max_connections(10)
                // As long as SQLite's busy timeout: an outage costs a message
                // seconds, not minutes, before it is held.
                .acquire_timeout(std::time::Duration::from_secs(5))
                .connect(url)
                .await
                .map_err(|e| StoreError::Open {
                    path: redact_url(url),
                    reason: e.to_string(),
                })?;
            return Ok(Store {
                pool,
                backend: Backend::Postgres,
                recycle,
                file: None,
            });
        }
        let Some(path) = sqlite_path(url) else {
            return Err(StoreError::UnsupportedUrl(redact_url(url)));
        };
        let open_err = |reason: String| StoreError::Open {
            path: path.display().to_string(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        }
        let in_memory = path.as_os_str().is_empty();
        let url = if url.contains('?') {
            url.to_owned()
        } else if in_memory {
            format!("{url}?mode=rwc")
        } else {
            // Created once here; the pool's connections only open it, so a
            // file deleted under the gateway is not silently recreated empty.
            let created = format!("{url}?mode=rwc");
            let conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&created)
                .await
                .map_err(|e| open_err(e.to_string()))?;
            let _ = sqlx::Connection::close(conn).await;
            format!("{url}?mode=rw")
        };
        let pool = options
            .max_connections(8)
            // A local file cannot drop a connection: skip the ping before each query.
            .test_before_acquire(false)
            .after_connect(|conn, _meta| {
                Box::pin(async move {
                    // WAL lets readers and one writer work at once; the busy timeout
                    // waits out a writer instead of failing with "database is locked".
                    conn.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;")
                        .await?;
                    Ok(())
                })
            })
            .connect(&url)
            .await
            .map_err(|e| open_err(e.to_string()))?;
        let file = if in_memory {
            None
        } else {
            DbFile::remember(&path, &url).await.map(Arc::new)
        };
        Ok(Store {
            pool,
            backend: Backend::Sqlite,
            recycle,
            file,
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self.backend {
            Backend::Sqlite => {
                sqlx::migrate!("./migrations/sqlite")
                    .run(&self.pool)
                    .await?
            }
            Backend::Postgres => {
                sqlx::migrate!("./migrations/postgres")
                    .run(&self.pool)
                    .await?
            }
        }
        Ok(())
    }

    /// Begins a transaction that will write. On SQLite it takes the write lock
    /// up front (`BEGIN IMMEDIATE`): a deferred transaction that reads and then
    /// writes fails at once with "database is locked" when another connection
    /// wrote in between, while an immediate one waits its turn (busy timeout).
    pub(crate) async fn begin_write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
        Ok(match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool.begin().await?,
        })
    }

    /// A cheap round trip, for health checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// After a storage failure that may persist: the connections open now are
    /// replaced by fresh ones as they are next used. A SQLite connection opened
    /// while the file was read-only stays read-only after the permissions
    /// return; a fresh one can write.
    ///
    /// Not while the file was deleted or replaced: the open connections are
    /// then the only way to the live data (see [`Store::check_file`]).
    pub fn recover(&self) {
        if self.file.as_ref().is_none_or(|f| f.is_in_place()) {
            self.recycle.mark();
        }
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The repositories: one small handle per aggregate, borrowing the store.
impl Store {
    /// Token usage and cost, per user and day and per model.
    pub fn usage(&self) -> UsageLedger<'_> {
        UsageLedger { db: self }
    }

    /// Sub-agent roles' own history, per user and role.
    pub fn role_notes(&self) -> RoleNotes<'_> {
        RoleNotes { db: self }
    }

    /// The whole reasoning behind clipped answers, for their askers.
    pub fn reasoning(&self) -> ReasoningNotes<'_> {
        ReasoningNotes { db: self }
    }

    /// Profile-update suggestions from reflection notes, per user.
    pub fn suggestions(&self) -> Suggestions<'_> {
        Suggestions { db: self }
    }

    /// The audit log: system events, newest first.
    pub fn audit(&self) -> Audit<'_> {
        Audit { db: self }
    }

    /// The outbox: what `switchboard mcp` asks the gateway to post, and what came of it.
    pub fn outbox(&self) -> Outbox<'_> {
        Outbox { db: self }
    }

    /// Schedules: future work on a conversation's behalf, and its due occurrences.
    pub fn schedules(&self) -> Schedules<'_> {
        Schedules { db: self }
    }

    /// Background tasks: their rows, progress and results.
    pub fn tasks(&self) -> Tasks<'_> {
        Tasks { db: self }
    }

    /// The planner's plans, one per session.
    pub fn plans(&self) -> Plans<'_> {
        Plans { db: self }
    }

    /// Long-term memories: stored, searched, learned from, collected; the reflection clocks and the answers' feedback.
    pub fn memories(&self) -> Memories<'_> {
        Memories { db: self }
    }

    /// Held media files and the per-user download quota.
    pub fn media(&self) -> MediaFiles<'_> {
        MediaFiles { db: self }
    }

    /// A session's messages: appended, read back, folded by compaction, searched and cleared.
    pub fn history(&self) -> History<'_> {
        History { db: self }
    }

    /// Sessions: opened by key, their state documents, idleness and memory-extraction claims.
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions { db: self }
    }

    /// The inbox: accepted messages kept until answered, taken over from gone processes, and the sightings that drop repeats.
    pub fn inbox(&self) -> Inbox<'_> {
        Inbox { db: self }
    }

    /// Paused turns: their checkpoints, the questions they wait on, and the resumes in flight.
    pub fn turns(&self) -> PausedTurns<'_> {
        PausedTurns { db: self }
    }

    /// Approval requests, their decisions (first wins) and the "always allow" rules.
    pub fn approvals(&self) -> Approvals<'_> {
        Approvals { db: self }
    }
}

/// A URL without its password or credential query values, for messages and output.
pub fn redact_url(url: &str) -> String {
    crate::secrets::shown_url(url)
}

/// The file path of a `sqlite:` URL (`sqlite://rel/path.db`, `sqlite:///abs.db`, `sqlite::memory:`).
pub(crate) fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let file = rest.split('?').next().unwrap_or(rest);
    Some(if file == ":memory:" {
        PathBuf::new()
    } else {
        Path::new(file).to_path_buf()
    })
}

/// Now, in epoch milliseconds (how times are stored).
pub(crate) fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Row ids as an SQL list (`1, 2, 3`) for `IN (…)`: numbers only, so safe
/// to put in the statement, and one statement whatever their count.
pub(crate) fn id_list(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn ms(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn dt(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// A direct message "text" from user 1 on the test platform.
#[cfg(test)]
pub(crate) use approvals::tests::record as test_approval;
#[cfg(test)]
pub(crate) use inbox::tests::message as test_message;

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
        assert_eq!(
            sqlite_path("sqlite://./data/x.db"),
            Some(PathBuf::from("./data/x.db"))
        );
        assert_eq!(
            sqlite_path("sqlite:///tmp/x.db?mode=rwc"),
            Some(PathBuf::from("/tmp/x.db"))
        );
        assert_eq!(sqlite_path("postgres://localhost/test"), None);
    }

    #[test]
    fn urls_lose_their_password() {
        let shown = redact_url("postgres://app:hunter2@db.internal:5432/sb");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(
            shown.contains("app:redacted@db.internal:5432/sb"),
            "{shown}"
        );
        assert_eq!(redact_url("sqlite://./data/x.db"), "sqlite://./data/x.db");
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
        assert!(
            err.contains("cannot open the database") && err.contains("DATABASE_URL"),
            "{err}"
        );
    }
}
