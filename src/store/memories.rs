//! Long-term memories of one user: rows, caps per kind and collection. Every
//! query is scoped by the owner; full-text search lives in `memory_fts.rs`.

use super::memory_terms::index_text;
use super::{dt, ms, SessionKey, Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::any::AnyRow;
use sqlx::Row;
use switchboard_platform::{Platform, UserId};

/// Long-term memories, their search, learning and collection, the reflection clocks and the answers' feedback (`store.memories()`).
#[derive(Debug, Clone, Copy)]
pub struct Memories<'a> {
    pub(super) db: &'a Store,
}

/// Whose memory: one user on one platform. Memories are never shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemoryOwner {
    pub platform: Platform,
    pub user: UserId,
}

impl MemoryOwner {
    pub fn new(platform: Platform, user: UserId) -> MemoryOwner {
        MemoryOwner { platform, user }
    }

    /// The owner of a session's memories: its user, whatever the chat.
    pub fn of(key: &SessionKey) -> MemoryOwner {
        MemoryOwner {
            platform: key.platform,
            user: key.user,
        }
    }
}

/// What a memory is about. L1 atoms are extracted from conversations; L2 and
/// L3 are distilled from L1; facts are saved on request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// L1: stable tastes, style, constraints, habits.
    Preference,
    /// L1: a non-obvious decision and its reason.
    Decision,
    /// L2: a reusable situation and how the user handles it.
    Scenario,
    /// L3: who the user is.
    Persona,
    /// Something the user or the agent asked to remember.
    Fact,
    /// The agent's periodic note on the user: changed goals, open loops, risks.
    Reflection,
}

impl MemoryKind {
    pub const ALL: [MemoryKind; 6] = [
        MemoryKind::Persona,
        MemoryKind::Preference,
        MemoryKind::Scenario,
        MemoryKind::Decision,
        MemoryKind::Fact,
        MemoryKind::Reflection,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Preference => "preference",
            MemoryKind::Decision => "decision",
            MemoryKind::Scenario => "scenario",
            MemoryKind::Persona => "persona",
            MemoryKind::Fact => "fact",
            MemoryKind::Reflection => "reflection",
        }
    }

    pub fn parse(s: &str) -> Option<MemoryKind> {
        MemoryKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// How many of this kind a user keeps (the soft limit): beyond, the least
    /// valuable are collected (see `memory::gc`).
    pub fn cap(self) -> u32 {
        match self {
            MemoryKind::Preference | MemoryKind::Fact => 50,
            MemoryKind::Persona => 5,
            MemoryKind::Scenario => 20,
            MemoryKind::Decision => 30,
            MemoryKind::Reflection => 10,
        }
    }

    /// Kept regardless of age (still dropped by caps, expiry or the user).
    pub fn is_lasting(self) -> bool {
        matches!(self, MemoryKind::Preference | MemoryKind::Persona)
    }
}

/// A memory to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    pub kind: MemoryKind,
    pub content: String,
    pub source_ref: String,
    /// 0.0 – 1.0.
    pub importance: f64,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A stored memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRecord {
    pub id: i64,
    pub kind: MemoryKind,
    pub content: String,
    pub source_ref: String,
    pub importance: f64,
    pub access_count: i64,
    pub last_access: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Pinned by the user (`/memory pin`): never collected.
    pub pinned: bool,
}

pub(crate) const COLUMNS: &str =
    "m.id, m.kind, m.content, m.source_ref, m.importance, m.access_count, m.last_access, m.expires_at, m.created_at, m.updated_at, m.pinned";

pub(crate) fn record(row: &AnyRow) -> Result<MemoryRecord, StoreError> {
    let kind: String = row.try_get("kind")?;
    Ok(MemoryRecord {
        id: row.try_get("id")?,
        kind: MemoryKind::parse(&kind)
            .ok_or_else(|| StoreError::Corrupt(format!("memory kind {kind:?}")))?,
        content: row.try_get("content")?,
        source_ref: row.try_get("source_ref")?,
        importance: row.try_get("importance")?,
        access_count: row.try_get("access_count")?,
        last_access: row.try_get::<Option<i64>, _>("last_access")?.map(dt),
        expires_at: row.try_get::<Option<i64>, _>("expires_at")?.map(dt),
        created_at: dt(row.try_get("created_at")?),
        updated_at: dt(row.try_get("updated_at")?),
        pinned: row.try_get::<i64, _>("pinned")? != 0,
    })
}

impl Memories<'_> {
    /// Stores a memory with its search `terms` (see `memory::terms`); returns its id.
    /// Limits are not applied here (see `memory::gc`).
    pub async fn insert(
        self,
        owner: MemoryOwner,
        memory: &NewMemory,
        terms: &[String],
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        let mut conn = self.db.pool.acquire().await?;
        insert(&mut conn, owner, memory, terms, at).await
    }

    /// Stores many memories in one transaction (imports, benchmarks).
    pub async fn insert_many(
        self,
        owner: MemoryOwner,
        memories: &[(NewMemory, Vec<String>)],
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        for (memory, terms) in memories {
            insert(&mut tx, owner, memory, terms, at).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Rewrites a memory (a merge of a duplicate). False when it is not the owner's.
    pub async fn update(
        self,
        owner: MemoryOwner,
        id: i64,
        update: &NewMemory,
        terms: &[String],
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            // A changed text loses its embedding: the worker embeds it again.
            "UPDATE memories SET content = $1, terms = $2, source_ref = $3, importance = $4, expires_at = $5, updated_at = $6,
             embedding = CASE WHEN content = $1 THEN embedding ELSE NULL END,
             embedding_model = CASE WHEN content = $1 THEN embedding_model ELSE NULL END
             WHERE id = $7 AND platform = $8 AND user_id = $9",
        )
        .bind(&update.content)
        .bind(index_text(owner.platform, owner.user, terms))
        .bind(&update.source_ref)
        .bind(update.importance.clamp(0.0, 1.0))
        .bind(update.expires_at.map(ms))
        .bind(ms(at))
        .bind(id)
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// One of the owner's memories (expired ones included: `/memory trace` shows them).
    pub async fn get(
        self,
        owner: MemoryOwner,
        id: i64,
    ) -> Result<Option<MemoryRecord>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM memories m WHERE m.id = $1 AND m.platform = $2 AND m.user_id = $3"))
            .bind(id)
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .fetch_optional(&self.db.pool)
            .await?;
        row.as_ref().map(record).transpose()
    }

    /// The owner's live memories of `kinds` (all kinds when empty), newest first.
    pub async fn of(
        self,
        owner: MemoryOwner,
        kinds: &[MemoryKind],
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        let kinds = if kinds.is_empty() {
            &MemoryKind::ALL[..]
        } else {
            kinds
        };
        // One index range per kind: a single scan filtered on kind would walk
        // every memory of a user whose pinned kinds are a tiny minority.
        let parts: Vec<String> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                format!(
                    "SELECT * FROM (SELECT {COLUMNS} FROM memories m WHERE m.platform = $1 AND m.user_id = $2 AND m.kind = '{}'
                     AND (m.expires_at IS NULL OR m.expires_at > $3) ORDER BY m.updated_at DESC, m.id DESC LIMIT $4) AS k{i}",
                    k.as_str()
                )
            })
            .collect();
        let sql = format!(
            "SELECT * FROM ({}) AS u ORDER BY updated_at DESC, id DESC LIMIT $4",
            parts.join(" UNION ALL ")
        );
        let rows = sqlx::query(&sql)
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .bind(ms(now))
            .bind(i64::from(limit))
            .fetch_all(&self.db.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    /// How many live memories of `kind` the owner has.
    pub async fn count(
        self,
        owner: MemoryOwner,
        kind: MemoryKind,
        now: DateTime<Utc>,
    ) -> Result<u32, StoreError> {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM memories WHERE platform = $1 AND user_id = $2 AND kind = $3
             AND (expires_at IS NULL OR expires_at > $4)",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(kind.as_str())
        .bind(ms(now))
        .fetch_one(&self.db.pool)
        .await?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// Deletes one of the owner's memories. False when there is no such memory of theirs.
    pub async fn delete(self, owner: MemoryOwner, id: i64) -> Result<bool, StoreError> {
        let done =
            sqlx::query("DELETE FROM memories WHERE id = $1 AND platform = $2 AND user_id = $3")
                .bind(id)
                .bind(owner.platform.as_str())
                .bind(owner.user.0)
                .execute(&self.db.pool)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes every memory of `kind` of the owner (before an L3 refresh replaces them).
    pub async fn delete_of_kind(
        self,
        owner: MemoryOwner,
        kind: MemoryKind,
    ) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM memories WHERE platform = $1 AND user_id = $2 AND kind = $3")
                .bind(owner.platform.as_str())
                .bind(owner.user.0)
                .bind(kind.as_str())
                .execute(&self.db.pool)
                .await?;
        Ok(done.rows_affected())
    }

    /// Records that these memories were recalled.
    pub async fn touch(
        self,
        owner: MemoryOwner,
        ids: &[i64],
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let list = super::id_list(ids);
        sqlx::query(&format!(
            // The owner check is an expression, not an index condition: given
            // an index on owner, SQLite would walk all of a user's rows instead
            // of looking up the few ids.
            "UPDATE memories SET access_count = access_count + 1, last_access = $1
             WHERE id IN ({list}) AND platform || '' = $2 AND user_id + 0 = $3"
        ))
        .bind(ms(at))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Collects every user's expired memories and ordinary ones neither updated
    /// nor recalled since `stale_before` (preferences, persona and pinned
    /// memories are kept).
    pub async fn collect(
        self,
        now: DateTime<Utc>,
        stale_before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM memories WHERE pinned = 0 AND ((expires_at IS NOT NULL AND expires_at <= $1)
             OR (kind NOT IN ('preference', 'persona') AND updated_at < $2 AND COALESCE(last_access, 0) < $2))",
        )
        .bind(ms(now))
        .bind(ms(stale_before))
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Adds `n` to the owner's count of L1 atoms since the last layer refresh; returns the new count.
    pub async fn add_l1_since_layer(self, owner: MemoryOwner, n: u32) -> Result<u32, StoreError> {
        let count: i64 = sqlx::query_scalar(
            "INSERT INTO memory_owners (platform, user_id, l1_since_layer) VALUES ($1, $2, $3)
             ON CONFLICT (platform, user_id) DO UPDATE SET l1_since_layer = memory_owners.l1_since_layer + excluded.l1_since_layer
             RETURNING l1_since_layer",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(i64::from(n))
        .fetch_one(&self.db.pool)
        .await?;
        Ok(u32::try_from(count).unwrap_or(u32::MAX))
    }

    /// Restarts the owner's L1 count after a layer refresh.
    pub async fn reset_l1_since_layer(self, owner: MemoryOwner) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE memory_owners SET l1_since_layer = 0 WHERE platform = $1 AND user_id = $2",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }
}

pub(super) async fn insert(
    conn: &mut sqlx::AnyConnection,
    owner: MemoryOwner,
    memory: &NewMemory,
    terms: &[String],
    at: DateTime<Utc>,
) -> Result<i64, StoreError> {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO memories (platform, user_id, kind, content, terms, source_ref, importance, expires_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id",
    )
    .bind(owner.platform.as_str())
    .bind(owner.user.0)
    .bind(memory.kind.as_str())
    .bind(&memory.content)
    .bind(index_text(owner.platform, owner.user, terms))
    .bind(&memory.source_ref)
    .bind(memory.importance.clamp(0.0, 1.0))
    .bind(memory.expires_at.map(ms))
    .bind(ms(at))
    .fetch_one(&mut *conn)
    .await?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;
    use chrono::Duration;

    fn owner(user: i64) -> MemoryOwner {
        MemoryOwner::new(Platform::Telegram, UserId(user))
    }

    fn new(kind: MemoryKind, content: &str) -> NewMemory {
        NewMemory {
            kind,
            content: content.into(),
            source_ref: "test".into(),
            importance: 0.5,
            expires_at: None,
        }
    }

    #[tokio::test]
    async fn rows_are_scoped_by_owner() {
        let (store, _dir) = test_store().await;
        let now = Utc::now();
        let id = store
            .memories()
            .insert(
                owner(1),
                &new(MemoryKind::Fact, "likes tea"),
                &["tea".into()],
                now,
            )
            .await
            .unwrap();
        assert!(store.memories().get(owner(1), id).await.unwrap().is_some());
        assert!(store.memories().get(owner(2), id).await.unwrap().is_none());
        assert!(store
            .memories()
            .of(owner(2), &[], 10, now)
            .await
            .unwrap()
            .is_empty());
        assert!(!store.memories().delete(owner(2), id).await.unwrap());
        assert!(!store
            .memories()
            .update(owner(2), id, &new(MemoryKind::Fact, "x"), &[], now)
            .await
            .unwrap());
        assert!(store.memories().delete(owner(1), id).await.unwrap());
    }

    #[tokio::test]
    async fn collection_takes_expired_and_stale_ordinary_memories() {
        let (store, _dir) = test_store().await;
        let now = Utc::now();
        let old = now - Duration::days(120);
        let stale = store
            .memories()
            .insert(
                owner(1),
                &new(MemoryKind::Decision, "old decision"),
                &[],
                old,
            )
            .await
            .unwrap();
        let pref = store
            .memories()
            .insert(owner(1), &new(MemoryKind::Preference, "old pref"), &[], old)
            .await
            .unwrap();
        let recalled = store
            .memories()
            .insert(owner(1), &new(MemoryKind::Fact, "old but used"), &[], old)
            .await
            .unwrap();
        store
            .memories()
            .touch(owner(1), &[recalled], now - Duration::days(3))
            .await
            .unwrap();
        let mut expiring = new(MemoryKind::Fact, "until yesterday");
        expiring.expires_at = Some(now - Duration::days(1));
        let expired = store
            .memories()
            .insert(owner(1), &expiring, &[], now)
            .await
            .unwrap();
        let fresh = store
            .memories()
            .insert(owner(1), &new(MemoryKind::Fact, "fresh"), &[], now)
            .await
            .unwrap();
        // Expired memories are invisible before they are collected.
        let live: Vec<i64> = store
            .memories()
            .of(owner(1), &[], 10, now)
            .await
            .unwrap()
            .iter()
            .map(|m| m.id)
            .collect();
        assert!(!live.contains(&expired));

        assert_eq!(
            store
                .memories()
                .collect(now, now - Duration::days(90))
                .await
                .unwrap(),
            2
        );
        for (id, kept) in [
            (stale, false),
            (pref, true),
            (recalled, true),
            (expired, false),
            (fresh, true),
        ] {
            assert_eq!(
                store.memories().get(owner(1), id).await.unwrap().is_some(),
                kept,
                "memory {id}"
            );
        }
    }

    #[tokio::test]
    async fn l1_counter_accumulates_and_resets() {
        let (store, _dir) = test_store().await;
        assert_eq!(
            store
                .memories()
                .add_l1_since_layer(owner(1), 3)
                .await
                .unwrap(),
            3
        );
        assert_eq!(
            store
                .memories()
                .add_l1_since_layer(owner(1), 4)
                .await
                .unwrap(),
            7
        );
        assert_eq!(
            store
                .memories()
                .add_l1_since_layer(owner(2), 1)
                .await
                .unwrap(),
            1
        );
        store
            .memories()
            .reset_l1_since_layer(owner(1))
            .await
            .unwrap();
        assert_eq!(
            store
                .memories()
                .add_l1_since_layer(owner(1), 1)
                .await
                .unwrap(),
            1
        );
    }
}
