//! Memory embeddings beside the rows (semantic recall, `EMBEDDINGS_*`): the
//! worker's queue of rows not embedded yet, writing a vector, and reading a
//! user's vectors for the in-memory index. SQLite keeps a vector as a BLOB of
//! little-endian f32, PostgreSQL as `real[]` (read and written as its text
//! form, the one encoding the `Any` driver passes through).

use super::memories::{record, MemoryOwner, MemoryRecord, COLUMNS};
use super::{ms, Backend, Memories, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// A memory waiting for its embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Unembedded {
    pub id: i64,
    pub content: String,
}

/// One stored embedding, as the recall index reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVector {
    pub id: i64,
    /// When it was written (epoch ms): the index reads what changed since.
    pub embedded_at: i64,
    pub vector: Vec<f32>,
}

/// A place in the write order of a user's vectors: the last one read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct VectorCursor {
    /// Epoch ms.
    pub embedded_at: i64,
    pub id: i64,
}

impl VectorCursor {
    /// Before every vector.
    pub const START: VectorCursor = VectorCursor {
        embedded_at: i64::MIN,
        id: i64::MIN,
    };

    /// Just before every vector written after `embedded_at` (epoch ms).
    pub fn at(embedded_at: i64) -> VectorCursor {
        VectorCursor {
            embedded_at,
            id: i64::MAX,
        }
    }

    /// Where `row` is.
    pub fn of(row: &StoredVector) -> VectorCursor {
        VectorCursor {
            embedded_at: row.embedded_at,
            id: row.id,
        }
    }
}

impl Default for VectorCursor {
    fn default() -> VectorCursor {
        VectorCursor::START
    }
}

/// How far the embedding of memories has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingProgress {
    /// Rows with a vector of the current model.
    pub embedded: u64,
    /// Rows still waiting.
    pub waiting: u64,
}

/// Little-endian f32 bytes (the SQLite BLOB).
pub fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector of a BLOB; `None` when its length is not a whole number of f32.
pub fn bytes_vector(b: &[u8]) -> Option<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// PostgreSQL's text form of a `real[]`: `{0.5,-1,2.25}`.
pub(super) fn array_text(v: &[f32]) -> String {
    let items: Vec<String> = v.iter().map(f32::to_string).collect();
    format!("{{{}}}", items.join(","))
}

pub(super) fn text_vector(t: &str) -> Option<Vec<f32>> {
    let inner = t.trim().strip_prefix('{')?.strip_suffix('}')?;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner.split(',').map(|x| x.trim().parse().ok()).collect()
}

impl Memories<'_> {
    /// Up to `limit` memories (any user's) with no embedding yet, oldest first.
    pub async fn unembedded(self, limit: u32) -> Result<Vec<Unembedded>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, content FROM memories WHERE embedding_model IS NULL ORDER BY id LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Unembedded {
                    id: r.try_get("id")?,
                    content: r.try_get("content")?,
                })
            })
            .collect()
    }

    /// Stores memory `id`'s embedding by `model` (`None`: the endpoint refused
    /// the text; it is skipped until the model changes). Only while the row
    /// still holds `content`: an edit in between leaves it queued.
    pub async fn save_embedding(
        self,
        id: i64,
        content: &str,
        model: &str,
        vector: Option<&[f32]>,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let dim = vector.map(|v| i64::try_from(v.len()).unwrap_or(i64::MAX));
        let bound = match self.db.backend {
            Backend::Sqlite => sqlx::query(
                "UPDATE memories SET embedding = $1, embedding_model = $2, embedding_dim = $3, embedded_at = $4
                 WHERE id = $5 AND content = $6",
            )
            .bind(vector.map(vector_bytes)),
            Backend::Postgres => sqlx::query(
                "UPDATE memories SET embedding = CAST(CAST($1 AS TEXT) AS REAL[]), embedding_model = $2,
                 embedding_dim = $3, embedded_at = $4 WHERE id = $5 AND content = $6",
            )
            .bind(vector.map(array_text)),
        };
        let done = bound
            .bind(model)
            .bind(dim)
            .bind(ms(at))
            .bind(id)
            .bind(content)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Queues again every memory embedded by another model than `model`;
    /// returns how many.
    pub async fn forget_other_embeddings(self, model: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE memories SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL, embedded_at = NULL
             WHERE embedding_model IS NOT NULL AND embedding_model <> $1",
        )
        .bind(model)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Rows embedded by `model` and rows still waiting, over all users.
    pub async fn embedding_progress(self, model: &str) -> Result<EmbeddingProgress, StoreError> {
        let row = sqlx::query(
            "SELECT COALESCE(SUM(CASE WHEN embedding_model = $1 AND embedding IS NOT NULL THEN 1 ELSE 0 END), 0) AS done,
                    COALESCE(SUM(CASE WHEN embedding_model IS NULL THEN 1 ELSE 0 END), 0) AS waiting
             FROM memories",
        )
        .bind(model)
        .fetch_one(&self.db.pool)
        .await?;
        let count = |name: &str| -> Result<u64, StoreError> {
            Ok(u64::try_from(row.try_get::<i64, _>(name)?).unwrap_or(0))
        };
        Ok(EmbeddingProgress {
            embedded: count("done")?,
            waiting: count("waiting")?,
        })
    }

    /// Up to `limit` of the owner's vectors by `model` that come after
    /// `after` in write order (`embedded_at`, then id): a cursor the caller
    /// moves on page by page ([`VectorCursor::START`] for all of them).
    /// Expired and deleted rows are the caller's to drop.
    pub async fn vectors_after(
        self,
        owner: MemoryOwner,
        model: &str,
        after: VectorCursor,
        limit: u32,
    ) -> Result<Vec<StoredVector>, StoreError> {
        let rows = self
            .rows_after(self.vector_column(), owner, model, after, limit)
            .await?;
        rows.iter().map(|r| self.stored_vector(r)).collect()
    }

    /// Where up to `limit` of the owner's vectors by `model` after `after`
    /// are in the write order, without the vectors (the index alone is
    /// read): what a re-read compares with what it holds.
    pub async fn vector_stamps_after(
        self,
        owner: MemoryOwner,
        model: &str,
        after: VectorCursor,
        limit: u32,
    ) -> Result<Vec<VectorCursor>, StoreError> {
        let rows = self
            .rows_after("embedded_at", owner, model, after, limit)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(VectorCursor {
                    embedded_at: r.try_get("embedded_at")?,
                    id: r.try_get("id")?,
                })
            })
            .collect()
    }

    /// The owner's vectors by `model` among `ids` (any order).
    pub async fn vectors_of(
        self,
        owner: MemoryOwner,
        model: &str,
        ids: &[i64],
    ) -> Result<Vec<StoredVector>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = super::id_list(ids);
        // As in `live_of`: the owner check is an expression, so the ids lead.
        let rows = sqlx::query(&format!(
            "SELECT id, {} FROM memories WHERE id IN ({list})
             AND platform || '' = $1 AND user_id + 0 = $2 AND embedding_model = $3
             AND embedding IS NOT NULL",
            self.vector_column()
        ))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(model)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(|r| self.stored_vector(r)).collect()
    }

    /// `id` and `columns` of up to `limit` of the owner's embedded rows by
    /// `model` after `after`, in write order. `>=` then the tie on id: both
    /// planners read a range of the (platform, user_id, embedded_at) index.
    async fn rows_after(
        self,
        columns: &str,
        owner: MemoryOwner,
        model: &str,
        after: VectorCursor,
        limit: u32,
    ) -> Result<Vec<sqlx::any::AnyRow>, StoreError> {
        Ok(sqlx::query(&format!(
            "SELECT id, {columns} FROM memories
             WHERE platform = $1 AND user_id = $2 AND embedded_at >= $3
             AND (embedded_at > $3 OR id > $4) AND embedding_model = $5
             AND embedding IS NOT NULL ORDER BY embedded_at, id LIMIT $6"
        ))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(after.embedded_at)
        .bind(after.id)
        .bind(model)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?)
    }

    /// The write time and the embedding, as the backend's row decoding reads them.
    fn vector_column(self) -> &'static str {
        match self.db.backend {
            Backend::Sqlite => "embedded_at, embedding",
            Backend::Postgres => "embedded_at, CAST(embedding AS TEXT) AS embedding",
        }
    }

    fn stored_vector(self, r: &sqlx::any::AnyRow) -> Result<StoredVector, StoreError> {
        let vector = match self.db.backend {
            Backend::Sqlite => bytes_vector(&r.try_get::<Vec<u8>, _>("embedding")?),
            Backend::Postgres => text_vector(&r.try_get::<String, _>("embedding")?),
        };
        let id: i64 = r.try_get("id")?;
        let vector =
            vector.ok_or_else(|| StoreError::Corrupt(format!("embedding of memory {id}")))?;
        Ok(StoredVector {
            id,
            embedded_at: r.try_get("embedded_at")?,
            vector,
        })
    }

    /// The owner's live memories among `ids` (any order).
    pub async fn live_of(
        self,
        owner: MemoryOwner,
        ids: &[i64],
        now: DateTime<Utc>,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = super::id_list(ids);
        // As in `touch`: the owner check is an expression, so the ids lead.
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM memories m WHERE m.id IN ({list})
             AND m.platform || '' = $1 AND m.user_id + 0 = $2 AND (m.expires_at IS NULL OR m.expires_at > $3)"
        ))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(now))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(record).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_both_encodings() {
        let v = vec![0.5f32, -1.0, 2.25, 1e-7, f32::MAX];
        assert_eq!(bytes_vector(&vector_bytes(&v)), Some(v.clone()));
        assert_eq!(text_vector(&array_text(&v)), Some(v));
        assert_eq!(bytes_vector(&[1, 2, 3]), None);
        assert_eq!(text_vector("{1,x}"), None);
        assert_eq!(text_vector("{}"), Some(Vec::new()));
    }
}
