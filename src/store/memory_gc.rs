//! What garbage collection by value reads and deletes: the value inputs of a
//! kind's memories, pins, and owners over a kind's limit. The scoring itself
//! lives in `memory::gc`.

use super::memories::{MemoryKind, MemoryOwner};
use super::{dt, ms, Memories, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::{Platform, UserId};

/// What the value of one collectable (unpinned, live) memory is computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct GcCandidate {
    pub id: i64,
    pub importance: f64,
    pub access_count: i64,
    pub last_access: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

impl Memories<'_> {
    /// Deletes the owner's expired, unpinned memories of `kind`; returns how many.
    pub async fn delete_expired(
        self,
        owner: MemoryOwner,
        kind: MemoryKind,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM memories WHERE platform = $1 AND user_id = $2 AND kind = $3
             AND pinned = 0 AND expires_at IS NOT NULL AND expires_at <= $4",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(kind.as_str())
        .bind(ms(now))
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// The owner's live, unpinned memories of `kind` with what their value is
    /// computed from, and how many pinned ones the kind holds.
    pub async fn gc_candidates(
        self,
        owner: MemoryOwner,
        kind: MemoryKind,
        now: DateTime<Utc>,
    ) -> Result<(Vec<GcCandidate>, u32), StoreError> {
        let rows = sqlx::query(
            "SELECT id, importance, access_count, last_access, updated_at, pinned FROM memories
             WHERE platform = $1 AND user_id = $2 AND kind = $3
             AND (pinned = 1 OR expires_at IS NULL OR expires_at > $4)",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(kind.as_str())
        .bind(ms(now))
        .fetch_all(&self.db.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        let mut pinned = 0u32;
        for row in &rows {
            if row.try_get::<i64, _>("pinned")? != 0 {
                pinned = pinned.saturating_add(1);
                continue;
            }
            out.push(GcCandidate {
                id: row.try_get("id")?,
                importance: row.try_get("importance")?,
                access_count: row.try_get("access_count")?,
                last_access: row.try_get::<Option<i64>, _>("last_access")?.map(dt),
                updated_at: dt(row.try_get("updated_at")?),
            });
        }
        Ok((out, pinned))
    }

    /// Deletes these unpinned memories of the owner; returns how many.
    pub async fn delete_unpinned(self, owner: MemoryOwner, ids: &[i64]) -> Result<u64, StoreError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let list = super::id_list(ids);
        let done = sqlx::query(&format!(
            "DELETE FROM memories WHERE id IN ({list}) AND platform = $1 AND user_id = $2 AND pinned = 0"
        ))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Pins (or unpins) one of the owner's memories. A pinned memory loses its
    /// expiry: it stays until the user forgets or unpins it. False when the
    /// owner has no such memory.
    pub async fn set_pinned(
        self,
        owner: MemoryOwner,
        id: i64,
        pinned: bool,
    ) -> Result<bool, StoreError> {
        let sql = if pinned {
            "UPDATE memories SET pinned = 1, expires_at = NULL WHERE id = $1 AND platform = $2 AND user_id = $3"
        } else {
            "UPDATE memories SET pinned = 0 WHERE id = $1 AND platform = $2 AND user_id = $3"
        };
        let done = sqlx::query(sql)
            .bind(id)
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Owners holding more than `limit` memories of `kind` (at most `max`).
    pub async fn owners_over(
        self,
        kind: MemoryKind,
        limit: u32,
        max: u32,
    ) -> Result<Vec<MemoryOwner>, StoreError> {
        let rows = sqlx::query(
            "SELECT platform, user_id FROM memories WHERE kind = $1
             GROUP BY platform, user_id HAVING COUNT(*) > $2 LIMIT $3",
        )
        .bind(kind.as_str())
        .bind(i64::from(limit))
        .bind(i64::from(max))
        .fetch_all(&self.db.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let platform: String = row.try_get("platform")?;
            let platform = Platform::parse(&platform)
                .ok_or_else(|| StoreError::Corrupt(format!("memory platform {platform:?}")))?;
            out.push(MemoryOwner::new(platform, UserId(row.try_get("user_id")?)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_store, NewMemory};
    use chrono::Duration;

    fn owner(user: i64) -> MemoryOwner {
        MemoryOwner::new(Platform::Telegram, UserId(user))
    }

    fn fact(content: &str, expires_at: Option<DateTime<Utc>>) -> NewMemory {
        NewMemory {
            kind: MemoryKind::Fact,
            content: content.into(),
            source_ref: "test".into(),
            importance: 0.5,
            expires_at,
        }
    }

    #[tokio::test]
    async fn pins_shield_memories_from_every_delete_but_the_users() {
        let (store, _dir) = test_store().await;
        let now = Utc::now();
        let past = Some(now - Duration::days(1));
        let pinned = store
            .memories()
            .insert(owner(1), &fact("pinned", past), &[], now)
            .await
            .unwrap();
        let expired = store
            .memories()
            .insert(owner(1), &fact("expired", past), &[], now)
            .await
            .unwrap();
        let plain = store
            .memories()
            .insert(owner(1), &fact("plain", None), &[], now)
            .await
            .unwrap();
        assert!(!store
            .memories()
            .set_pinned(owner(2), pinned, true)
            .await
            .unwrap());
        assert!(store
            .memories()
            .set_pinned(owner(1), pinned, true)
            .await
            .unwrap());
        let m = store
            .memories()
            .get(owner(1), pinned)
            .await
            .unwrap()
            .unwrap();
        assert!(m.pinned && m.expires_at.is_none());

        assert_eq!(
            store
                .memories()
                .delete_expired(owner(1), MemoryKind::Fact, now)
                .await
                .unwrap(),
            1
        );
        let (candidates, pins) = store
            .memories()
            .gc_candidates(owner(1), MemoryKind::Fact, now)
            .await
            .unwrap();
        assert_eq!(pins, 1);
        assert_eq!(candidates.iter().map(|c| c.id).collect::<Vec<_>>(), [plain]);
        assert_eq!(
            store
                .memories()
                .delete_unpinned(owner(1), &[pinned, plain, expired])
                .await
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .memories()
                .collect(now + Duration::days(999), now + Duration::days(999))
                .await
                .unwrap(),
            0
        );
        assert_eq!(
            store
                .memories()
                .owners_over(MemoryKind::Fact, 0, 10)
                .await
                .unwrap(),
            [owner(1)]
        );
        assert!(store
            .memories()
            .set_pinned(owner(1), pinned, false)
            .await
            .unwrap());
        assert_eq!(
            store
                .memories()
                .delete_unpinned(owner(1), &[pinned])
                .await
                .unwrap(),
            1
        );
    }
}
