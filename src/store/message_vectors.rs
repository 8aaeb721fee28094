//! Chat-message embeddings beside the rows (semantic history search,
//! `EMBEDDINGS_*`): the worker's queue of messages with no row of the model,
//! writing a vector (or marking a message settled without one), and reading
//! one session's vectors for `query_my_chat_history`. Encodings as for
//! memories: SQLite BLOB of little-endian f32, PostgreSQL `real[]` as text.

use super::console::HistoryRow;
use super::history_search::history_row;
use super::memory_vectors::{array_text, bytes_vector, text_vector, vector_bytes};
use super::{ms, Backend, EmbeddingProgress, History, HistoryWindow, SessionId, StoreError};
use chrono::{DateTime, Utc};
use sqlx::any::AnyRow;
use sqlx::Row;

/// Messages this far below the newest settled one are still looked at (a
/// PostgreSQL id may commit after a higher one).
const QUEUE_SLACK: i64 = 1000;

/// A message waiting for its embedding; `payload` is the stored JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedMessage {
    pub id: i64,
    pub payload: String,
}

/// One stored message vector of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageVector {
    pub id: i64,
    pub vector: Vec<f32>,
}

/// The queue: messages above the watermark with no row of the model.
const QUEUE: &str = "FROM messages m WHERE m.id > COALESCE((SELECT MAX(v.message_id) FROM message_vectors v WHERE v.model = $1), 0) - $2
     AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = $1)";

impl History<'_> {
    /// Up to `limit` messages (any session's) with no row of `model`, oldest first.
    pub async fn unembedded(
        self,
        model: &str,
        limit: u32,
    ) -> Result<Vec<QueuedMessage>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT m.id, m.payload {QUEUE} ORDER BY m.id LIMIT $3"
        ))
        .bind(model)
        .bind(QUEUE_SLACK)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(QueuedMessage {
                    id: r.try_get("id")?,
                    payload: r.try_get("payload")?,
                })
            })
            .collect()
    }

    /// Stores message `id`'s vector by `model`; `None` settles it without one
    /// (not a text to embed, or refused). A message deleted meanwhile is left.
    pub async fn save_vector(
        self,
        id: i64,
        model: &str,
        role: &str,
        vector: Option<&[f32]>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let dim = vector.map(|v| i64::try_from(v.len()).unwrap_or(i64::MAX));
        let value = match self.db.backend {
            Backend::Sqlite => "$5",
            Backend::Postgres => "CAST(CAST($5 AS TEXT) AS REAL[])",
        };
        let query = format!(
            "INSERT INTO message_vectors (message_id, model, role, dim, embedding, embedded_at)
             SELECT $1, $2, $3, $4, {value}, $6 WHERE EXISTS (SELECT 1 FROM messages WHERE id = $1)
             ON CONFLICT (message_id, model) DO NOTHING"
        );
        let bound = sqlx::query(&query)
            .bind(id)
            .bind(model)
            .bind(role)
            .bind(dim);
        let bound = match self.db.backend {
            Backend::Sqlite => bound.bind(vector.map(vector_bytes)),
            Backend::Postgres => bound.bind(vector.map(array_text)),
        };
        bound.bind(ms(at)).execute(&self.db.pool).await?;
        Ok(())
    }

    /// Deletes every message vector of another model than `model` (they are
    /// embedded again); returns how many.
    pub async fn forget_other_vectors(self, model: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM message_vectors WHERE model <> $1")
            .bind(model)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected())
    }

    /// Messages with a vector of `model`, and messages still queued.
    pub async fn embedding_progress(self, model: &str) -> Result<EmbeddingProgress, StoreError> {
        let embedded: i64 = sqlx::query(
            "SELECT COUNT(*) AS n FROM message_vectors WHERE model = $1 AND embedding IS NOT NULL",
        )
        .bind(model)
        .fetch_one(&self.db.pool)
        .await?
        .try_get("n")?;
        let waiting: i64 = sqlx::query(&format!("SELECT COUNT(*) AS n {QUEUE}"))
            .bind(model)
            .bind(QUEUE_SLACK)
            .fetch_one(&self.db.pool)
            .await?
            .try_get("n")?;
        Ok(EmbeddingProgress {
            embedded: u64::try_from(embedded).unwrap_or(0),
            waiting: u64::try_from(waiting).unwrap_or(0),
        })
    }

    /// Up to `limit` vectors by `model` of `session`'s messages within
    /// `window` whose role is one of `roles`, newest first.
    pub async fn vectors(
        self,
        session: &SessionId,
        model: &str,
        roles: [&str; 2],
        window: HistoryWindow,
        limit: u32,
    ) -> Result<Vec<MessageVector>, StoreError> {
        let column = match self.db.backend {
            Backend::Sqlite => "v.embedding",
            Backend::Postgres => "CAST(v.embedding AS TEXT) AS embedding",
        };
        let rows = sqlx::query(&format!(
            "SELECT m.id, {column} FROM messages m JOIN message_vectors v ON v.message_id = m.id
             WHERE m.session_id = $1 AND m.id < $2 AND m.created_at >= $3 AND m.created_at < $4
             AND v.model = $5 AND (v.role = $6 OR v.role = $7) AND v.embedding IS NOT NULL
             ORDER BY m.id DESC LIMIT $8"
        ))
        .bind(session)
        .bind(window.before.unwrap_or(i64::MAX))
        .bind(window.since.map_or(i64::MIN, ms))
        .bind(window.until.map_or(i64::MAX, ms))
        .bind(model)
        .bind(roles[0])
        .bind(roles[1])
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| message_vector(self.db.backend, r))
            .collect()
    }

    /// `session`'s messages among `ids` (any order); others' are never read.
    pub async fn rows_of(
        self,
        session: &SessionId,
        ids: &[i64],
    ) -> Result<Vec<HistoryRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = super::id_list(ids);
        let rows = sqlx::query(&format!(
            "SELECT id, payload, created_at, archived FROM messages
             WHERE session_id = $1 AND id IN ({list})"
        ))
        .bind(session)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(history_row).collect()
    }
}

fn message_vector(backend: Backend, r: &AnyRow) -> Result<MessageVector, StoreError> {
    let id: i64 = r.try_get("id")?;
    let vector = match backend {
        Backend::Sqlite => bytes_vector(&r.try_get::<Vec<u8>, _>("embedding")?),
        Backend::Postgres => text_vector(&r.try_get::<String, _>("embedding")?),
    };
    let vector = vector.ok_or_else(|| StoreError::Corrupt(format!("embedding of message {id}")))?;
    Ok(MessageVector { id, vector })
}
