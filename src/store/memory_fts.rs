//! Memory search: the FTS5-specific SQL (kept here so a PostgreSQL backend only
//! replaces this file) and the bounded substring fallback.
//!
//! The gateway segments text itself (words, and overlapping bigrams for CJK
//! and other unsegmented scripts, see `memory::terms`), and every indexed term
//! carries its owner's key: `telegram42x咖啡`. So one user's query can only
//! ever match that user's rows, and a query's cost depends on the size of that
//! user's memory, not on everyone's. On PostgreSQL the same `terms` column
//! becomes a `tsvector` with the `simple` configuration.

use super::memories::{record, MemoryKind, MemoryOwner, MemoryRecord, COLUMNS};
use super::memory_terms::{is_plain, owner_prefix};
use super::{ms, Backend, Memories, StoreError};
use chrono::{DateTime, Utc};

/// Most query terms used in one search (longer messages are cut).
const MAX_QUERY_TERMS: usize = 32;
/// Rows a substring fallback scans at most (the owner's most recent).
const LIKE_SCAN_ROWS: i64 = 500;

/// The FTS5 query matching any of `terms` of `owner`.
fn match_expr(owner: MemoryOwner, terms: &[String]) -> String {
    let prefix = owner_prefix(owner.platform, owner.user);
    terms
        .iter()
        .filter(|t| is_plain(t))
        .take(MAX_QUERY_TERMS)
        .map(|t| format!("\"{prefix}{t}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// The PostgreSQL tsquery matching any of `terms` of `owner`.
fn tsquery_expr(owner: MemoryOwner, terms: &[String]) -> String {
    let prefix = owner_prefix(owner.platform, owner.user);
    terms
        .iter()
        .filter(|t| is_plain(t) && !t.contains('\''))
        .take(MAX_QUERY_TERMS)
        .map(|t| format!("'{prefix}{t}'"))
        .collect::<Vec<_>>()
        .join(" | ")
}

impl Memories<'_> {
    /// The owner's live memories matching any of `terms`: the `limit` newest
    /// matches (by insertion), newest first. Ranking is the caller's (see
    /// `memory::recall`): BM25 over every match of a common term costs tens of
    /// milliseconds for a user with 100,000 memories, while the newest matches
    /// come straight off the index in rowid order.
    pub async fn search(
        self,
        owner: MemoryOwner,
        terms: &[String],
        kind: Option<MemoryKind>,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        let (expr, sql) = match self.db.backend {
            // The full-text query runs first and alone; CROSS JOIN keeps SQLite
            // from walking all of the user's rows by the owner index and probing
            // the candidates for each. Owner, expiry and kind are checked after.
            Backend::Sqlite => (
                match_expr(owner, terms),
                format!(
                    "SELECT {COLUMNS} FROM
                        (SELECT rowid FROM memories_fts WHERE memories_fts MATCH $1 ORDER BY rowid DESC LIMIT {candidates}) f
                     CROSS JOIN memories m ON m.id = f.rowid
                     WHERE m.platform = $2 AND m.user_id = $3
                     AND (m.expires_at IS NULL OR m.expires_at > $4) AND ($5 IS NULL OR m.kind = $5)
                     ORDER BY m.id DESC LIMIT $6",
                    candidates = u64::from(limit) * if kind.is_some() { 4 } else { 1 } + 16
                ),
            ),
            // The same pre-segmented terms as a `simple` tsvector (GIN-indexed).
            Backend::Postgres => (
                tsquery_expr(owner, terms),
                format!(
                    "SELECT {COLUMNS} FROM memories m
                     WHERE to_tsvector('simple', m.terms) @@ to_tsquery('simple', $1) AND m.platform = $2 AND m.user_id = $3
                     AND (m.expires_at IS NULL OR m.expires_at > $4) AND ($5::TEXT IS NULL OR m.kind = $5)
                     ORDER BY m.id DESC LIMIT $6"
                ),
            ),
        };
        if expr.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(&sql)
            .bind(expr)
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .bind(ms(now))
            .bind(kind.map(MemoryKind::as_str))
            .bind(i64::from(limit))
            .fetch_all(&self.db.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    /// The owner's live memories containing `needle` (case-insensitive for ASCII),
    /// newest first, among their most recent few thousand. For what the term
    /// index cannot find: a lone CJK character, a code with punctuation.
    pub async fn containing(
        self,
        owner: MemoryOwner,
        needle: &str,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<Vec<MemoryRecord>, StoreError> {
        if needle.trim().is_empty() {
            return Ok(Vec::new());
        }
        let pattern = format!(
            "%{}%",
            needle
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM (SELECT * FROM memories WHERE platform = $1 AND user_id = $2
                AND (expires_at IS NULL OR expires_at > $3) ORDER BY updated_at DESC LIMIT $4) m
             WHERE LOWER(m.content) LIKE LOWER($5) ESCAPE '\\' ORDER BY m.updated_at DESC LIMIT $6"
        ))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(now))
        .bind(LIKE_SCAN_ROWS)
        .bind(pattern)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(record).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory_terms::index_text;
    use crate::store::test_store;
    use crate::store::NewMemory;
    use crate::store::Store;
    use switchboard_platform::{Platform, UserId};

    fn owner(user: i64) -> MemoryOwner {
        MemoryOwner::new(Platform::Discord, UserId(user))
    }

    fn terms(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    async fn add(store: &Store, o: MemoryOwner, content: &str, t: &[&str]) -> i64 {
        let m = NewMemory {
            kind: MemoryKind::Fact,
            content: content.into(),
            source_ref: "test".into(),
            importance: 0.5,
            expires_at: None,
        };
        store
            .memories()
            .insert(o, &m, &terms(t), Utc::now())
            .await
            .unwrap()
    }

    #[test]
    fn owner_keys_keep_terms_apart() {
        assert_eq!(
            index_text(owner(42).platform, owner(42).user, &terms(&["咖啡", "tea"])),
            "discord42x咖啡 discord42xtea"
        );
        assert_eq!(
            index_text(owner(-7).platform, owner(-7).user, &terms(&["a-b", "ok"])),
            "discordn7xok"
        );
    }

    #[tokio::test]
    async fn search_finds_cjk_bigrams_only_for_the_owner() {
        let (store, _dir) = test_store().await;
        let mine = add(
            &store,
            owner(1),
            "用户喜欢喝咖啡",
            &["用户", "户喜", "喜欢", "欢喝", "喝咖", "咖啡"],
        )
        .await;
        let theirs = add(
            &store,
            owner(2),
            "他也喜欢咖啡",
            &["他也", "也喜", "喜欢", "欢咖", "咖啡"],
        )
        .await;
        let hits = store
            .memories()
            .search(owner(1), &terms(&["咖啡"]), None, 10, Utc::now())
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|m| m.id).collect::<Vec<_>>(), [mine]);
        let hits = store
            .memories()
            .search(owner(2), &terms(&["咖啡"]), None, 10, Utc::now())
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|m| m.id).collect::<Vec<_>>(), [theirs]);
        // Updates and deletes keep the index in step.
        let other = NewMemory {
            kind: MemoryKind::Fact,
            content: "用户喜欢茶".into(),
            source_ref: "t".into(),
            importance: 0.5,
            expires_at: None,
        };
        store
            .memories()
            .update(
                owner(1),
                mine,
                &other,
                &terms(&["喜欢", "欢茶"]),
                Utc::now(),
            )
            .await
            .unwrap();
        assert!(store
            .memories()
            .search(owner(1), &terms(&["咖啡"]), None, 10, Utc::now())
            .await
            .unwrap()
            .is_empty());
        store.memories().delete(owner(2), theirs).await.unwrap();
        assert!(store
            .memories()
            .search(owner(2), &terms(&["咖啡"]), None, 10, Utc::now())
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn substring_fallback_is_scoped_and_escapes_wildcards() {
        let (store, _dir) = test_store().await;
        let cat = add(&store, owner(1), "养了一只猫", &[]).await;
        add(&store, owner(2), "也养猫", &[]).await;
        add(&store, owner(1), "100% sure", &[]).await;
        let hits = store
            .memories()
            .containing(owner(1), "猫", 10, Utc::now())
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|m| m.id).collect::<Vec<_>>(), [cat]);
        assert_eq!(
            store
                .memories()
                .containing(owner(1), "0%", 10, Utc::now())
                .await
                .unwrap()
                .len(),
            1
        );
        assert!(store
            .memories()
            .containing(owner(1), "_", 10, Utc::now())
            .await
            .unwrap()
            .is_empty());
    }
}
