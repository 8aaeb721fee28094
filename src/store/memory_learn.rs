//! What preference learning keeps: the frequency statistics of a memory (how
//! often observed, when last, confidence) and each user's count of messages
//! since the last learning call.

use super::memories::MemoryOwner;
use super::{dt, ms, Memories, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// How often a memory was observed, when last, and how sure the learner is.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryStats {
    pub seen_count: i64,
    pub last_seen: Option<DateTime<Utc>>,
    /// 0.0 – 1.0.
    pub confidence: f64,
}

impl Memories<'_> {
    /// Records one more observation of a memory with the learner's confidence
    /// in it (`first`: the observation that created it). Confidence grows
    /// with each observation: `1 - (1 - c) × (1 - observed / 2)`.
    pub async fn observe(
        self,
        owner: MemoryOwner,
        id: i64,
        observed: f64,
        first: bool,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let observed = observed.clamp(0.0, 1.0);
        let sql = if first {
            "UPDATE memories SET seen_count = 1, last_seen = $1, confidence = $2
             WHERE id = $3 AND platform = $4 AND user_id = $5"
        } else {
            "UPDATE memories SET seen_count = seen_count + 1, last_seen = $1,
             confidence = 1.0 - (1.0 - confidence) * $2
             WHERE id = $3 AND platform = $4 AND user_id = $5"
        };
        // First: the confidence itself; later: the share of doubt that stays.
        let value = if first {
            observed
        } else {
            1.0 - observed / 2.0
        };
        let done = sqlx::query(sql)
            .bind(ms(at))
            .bind(value)
            .bind(id)
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The statistics of one of the owner's memories.
    pub async fn stats(
        self,
        owner: MemoryOwner,
        id: i64,
    ) -> Result<Option<MemoryStats>, StoreError> {
        let row = sqlx::query(
            "SELECT seen_count, last_seen, confidence FROM memories WHERE id = $1 AND platform = $2 AND user_id = $3",
        )
        .bind(id)
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .fetch_optional(&self.db.pool)
        .await?;
        row.map(|row| {
            Ok(MemoryStats {
                seen_count: row.try_get("seen_count")?,
                last_seen: row.try_get::<Option<i64>, _>("last_seen")?.map(dt),
                confidence: row.try_get("confidence")?,
            })
        })
        .transpose()
    }

    /// Counts one eligible message of the owner; true when it is the
    /// `every`-th since the last learning call, which this caller then makes
    /// (the count restarts: another process counting at once never also wins).
    pub async fn count_learning_message(
        self,
        owner: MemoryOwner,
        every: u32,
    ) -> Result<bool, StoreError> {
        let pending: i64 = sqlx::query_scalar(
            "INSERT INTO memory_owners (platform, user_id, learn_pending) VALUES ($1, $2, 1)
             ON CONFLICT (platform, user_id) DO UPDATE SET learn_pending = memory_owners.learn_pending + 1
             RETURNING learn_pending",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .fetch_one(&self.db.pool)
        .await?;
        if pending < i64::from(every) {
            return Ok(false);
        }
        let done = sqlx::query(
            "UPDATE memory_owners SET learn_pending = 0 WHERE platform = $1 AND user_id = $2 AND learn_pending >= $3",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(i64::from(every))
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_store, MemoryKind, NewMemory};
    use switchboard_platform::{Platform, UserId};

    fn owner(user: i64) -> MemoryOwner {
        MemoryOwner::new(Platform::Telegram, UserId(user))
    }

    #[tokio::test]
    async fn observations_count_and_raise_confidence() {
        let (store, _dir) = test_store().await;
        let now = Utc::now();
        let memory = NewMemory {
            kind: MemoryKind::Preference,
            content: "The user prefers tea".into(),
            source_ref: "test".into(),
            importance: 0.5,
            expires_at: None,
        };
        let id = store
            .memories()
            .insert(owner(1), &memory, &[], now)
            .await
            .unwrap();
        assert!(store
            .memories()
            .observe(owner(1), id, 0.6, true, now)
            .await
            .unwrap());
        assert!(!store
            .memories()
            .observe(owner(2), id, 0.6, false, now)
            .await
            .unwrap());
        assert!(store
            .memories()
            .observe(owner(1), id, 0.6, false, now)
            .await
            .unwrap());
        let stats = store.memories().stats(owner(1), id).await.unwrap().unwrap();
        assert_eq!(stats.seen_count, 2);
        assert!((stats.confidence - 0.72).abs() < 1e-9, "{stats:?}");
        assert!(stats.last_seen.is_some());
        assert!(store
            .memories()
            .stats(owner(2), id)
            .await
            .unwrap()
            .is_none());
    }

    #[tokio::test]
    async fn every_nth_message_wins_the_call() {
        let (store, _dir) = test_store().await;
        let wins: Vec<bool> = {
            let mut out = Vec::new();
            for _ in 0..7 {
                out.push(
                    store
                        .memories()
                        .count_learning_message(owner(1), 3)
                        .await
                        .unwrap(),
                );
            }
            out
        };
        assert_eq!(wins, [false, false, true, false, false, true, false]);
        assert!(store
            .memories()
            .count_learning_message(owner(2), 1)
            .await
            .unwrap());
    }
}
