//! What reflection notes need from the store: the users active since their
//! last note, a once-across-processes claim on the next one, and what they
//! said since.

use super::memories::MemoryOwner;
use super::{dt, ms, Memories, StoreError};
use crate::llm::Message;
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::{Platform, UserId};

impl Memories<'_> {
    /// Users with a session active since their last note whose note is due
    /// (written at or before `due_before`), and users never seen by the
    /// reflector (`None`: their clock has not started). Activity in the very
    /// millisecond the clock started counts as after it.
    pub async fn reflection_candidates(
        self,
        due_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<(MemoryOwner, Option<DateTime<Utc>>)>, StoreError> {
        let rows = sqlx::query(
            "SELECT s.platform, s.user_id, mo.reflected_at FROM sessions s
             LEFT JOIN memory_owners mo ON mo.platform = s.platform AND mo.user_id = s.user_id
             WHERE mo.reflected_at IS NULL OR (s.updated_at >= mo.reflected_at AND mo.reflected_at <= $1)
             GROUP BY s.platform, s.user_id, mo.reflected_at LIMIT $2",
        )
        .bind(ms(due_before))
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let platform: String = row.try_get("platform")?;
            let platform = Platform::parse(&platform)
                .ok_or_else(|| StoreError::Corrupt(format!("session platform {platform:?}")))?;
            let owner = MemoryOwner::new(platform, UserId(row.try_get("user_id")?));
            out.push((
                owner,
                row.try_get::<Option<i64>, _>("reflected_at")?.map(dt),
            ));
        }
        Ok(out)
    }

    /// Starts the owner's reflection clock at `now` unless it runs already.
    pub async fn start_reflection_clock(
        self,
        owner: MemoryOwner,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO memory_owners (platform, user_id, reflected_at) VALUES ($1, $2, $3)
             ON CONFLICT (platform, user_id) DO UPDATE SET reflected_at = excluded.reflected_at
             WHERE memory_owners.reflected_at IS NULL",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(now))
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Claims the owner's next note: true for the one caller that moved the
    /// clock from `was` to `now`.
    pub async fn claim_reflection(
        self,
        owner: MemoryOwner,
        was: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE memory_owners SET reflected_at = $1 WHERE platform = $2 AND user_id = $3 AND reflected_at = $4",
        )
        .bind(ms(now))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(was))
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The owner's messages in every chat since `since` (its millisecond
    /// included): the newest `limit`, oldest first.
    pub async fn messages_of_user_since(
        self,
        owner: MemoryOwner,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<Message>, StoreError> {
        let rows = sqlx::query(
            "SELECT m.payload FROM messages m JOIN sessions s ON s.id = m.session_id
             WHERE s.platform = $1 AND s.user_id = $2 AND m.created_at >= $3
             ORDER BY m.id DESC LIMIT $4",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(since))
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows.iter().rev() {
            let payload: String = row.try_get("payload")?;
            let m = serde_json::from_str(&payload)
                .map_err(|e| StoreError::Corrupt(format!("message payload: {e}")))?;
            out.push(m);
        }
        Ok(out)
    }
}
