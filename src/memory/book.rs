//! The memory book: saving with duplicate merging and per-kind limits, listing,
//! forgetting and collection. No model calls here (see `extract.rs`).

use super::gc::{self, Limits, OverSoft};
use super::terms::{query_terms, similarity, terms};
use super::{MemoryConfig, MemoryError, Semantic};
use crate::store::{MemoryOwner, MemoryRecord, NewMemory, Store};
use chrono::{DateTime, Duration, Utc};

/// Texts at least this similar (Jaccard of their terms) are the same memory.
const DUPLICATE_SIMILARITY: f64 = 0.75;
/// `source_ref`s kept on a memory merged from several sources.
const MAX_SOURCES: usize = 3;

/// What [`MemoryBook::save`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    Added(i64),
    /// Merged into this existing memory.
    Merged(i64),
}

impl Saved {
    pub fn id(self) -> i64 {
        match self {
            Saved::Added(id) | Saved::Merged(id) => id,
        }
    }
}

/// Per-user long-term memory over the store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct MemoryBook {
    store: Store,
    config: MemoryConfig,
    over_soft: OverSoft,
    /// Semantic recall, when `EMBEDDINGS_*` is set.
    semantic: Option<Semantic>,
}

impl MemoryBook {
    pub fn new(store: Store, config: MemoryConfig) -> MemoryBook {
        let semantic = config
            .embeddings
            .clone()
            .map(|e| Semantic::new(store.clone(), e));
        MemoryBook {
            store,
            config,
            over_soft: OverSoft::default(),
            semantic,
        }
    }

    /// Semantic recall, when configured.
    pub fn semantic(&self) -> Option<&Semantic> {
        self.semantic.as_ref()
    }

    /// Recalls the owner's memories for `message` within `budget` tokens, of
    /// the kinds `visible` allows; by meaning too when embeddings are set.
    pub async fn recall(
        &self,
        owner: MemoryOwner,
        message: &str,
        budget: usize,
        now: DateTime<Utc>,
        visible: &(dyn Fn(crate::store::MemoryKind) -> bool + Sync),
    ) -> Result<Vec<super::RecallHit>, crate::store::StoreError> {
        super::recall_semantic(
            &self.store,
            self.semantic.as_ref(),
            owner,
            message,
            budget,
            now,
            visible,
        )
        .await
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// Saves a memory, merging it into a near-duplicate of the same kind, and
    /// keeps the kind within its limits (see `memory::gc`): at the hard limit
    /// the least valuable go first and the insert is refused
    /// ([`MemoryError::Full`]) when all that is left is pinned; past the soft
    /// limit the kind is collected in the background.
    pub async fn save(
        &self,
        owner: MemoryOwner,
        memory: NewMemory,
        now: DateTime<Utc>,
    ) -> Result<Saved, MemoryError> {
        let content = memory.content.trim().to_owned();
        if content.is_empty() {
            return Err(MemoryError::Contract("empty memory".into()));
        }
        let memory = NewMemory { content, ..memory };
        if let Some(existing) = self.duplicate_of(owner, &memory, now).await? {
            let merged = merge(&existing, &memory);
            self.store
                .memories()
                .update(owner, existing.id, &merged, &terms(&merged.content), now)
                .await?;
            return Ok(Saved::Merged(existing.id));
        }
        let limits = Limits::of(memory.kind, self.config.hard_limit_pct);
        let mut count = self.store.memories().count(owner, memory.kind, now).await?;
        if count >= limits.hard {
            gc::collect_kind(
                &self.store,
                owner,
                memory.kind,
                limits.soft.saturating_sub(1),
                now,
            )
            .await?;
            count = self.store.memories().count(owner, memory.kind, now).await?;
            if count >= limits.hard {
                return Err(MemoryError::Full(memory.kind.as_str()));
            }
        }
        let id = self
            .store
            .memories()
            .insert(owner, &memory, &terms(&memory.content), now)
            .await?;
        if count.saturating_add(1) > limits.soft {
            self.over_soft.mark(owner, memory.kind);
        }
        Ok(Saved::Added(id))
    }

    /// The existing memory of the same kind that `memory` repeats, if any.
    async fn duplicate_of(
        &self,
        owner: MemoryOwner,
        memory: &NewMemory,
        now: DateTime<Utc>,
    ) -> Result<Option<MemoryRecord>, MemoryError> {
        let q = query_terms(&memory.content);
        let candidates: Vec<MemoryRecord> = if q.iter().any(|t| t.chars().count() > 1) {
            self.store
                .memories()
                .search(owner, &q, Some(memory.kind), 10, now)
                .await?
        } else {
            self.store
                .memories()
                .containing(owner, memory.content.trim(), 10, now)
                .await?
        };
        let wanted = normalized(&memory.content);
        Ok(candidates
            .into_iter()
            .filter(|c| c.kind == memory.kind)
            .map(|c| {
                let sim = if normalized(&c.content) == wanted {
                    1.0
                } else {
                    similarity(&c.content, &memory.content)
                };
                (c, sim)
            })
            .filter(|(_, sim)| *sim >= DUPLICATE_SIMILARITY)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, _)| c))
    }

    /// Forgets one of the owner's memories.
    pub async fn forget(&self, owner: MemoryOwner, id: i64) -> Result<bool, MemoryError> {
        Ok(self.store.memories().delete(owner, id).await?)
    }

    /// The owner's live memories, newest first.
    pub async fn list(
        &self,
        owner: MemoryOwner,
        now: DateTime<Utc>,
    ) -> Result<Vec<MemoryRecord>, MemoryError> {
        Ok(self.store.memories().of(owner, &[], 200, now).await?)
    }

    /// Pins or unpins one of the owner's memories; false when there is none.
    pub async fn pin(
        &self,
        owner: MemoryOwner,
        id: i64,
        pinned: bool,
    ) -> Result<bool, MemoryError> {
        Ok(self.store.memories().set_pinned(owner, id, pinned).await?)
    }

    /// The background part of the limits: trims the kinds that passed their
    /// soft limit since the last call back to it, by value.
    pub async fn collect_marked(&self, now: DateTime<Utc>) -> Result<u64, MemoryError> {
        let mut total = 0;
        for (owner, kind) in self.over_soft.take() {
            let limits = Limits::of(kind, self.config.hard_limit_pct);
            total += gc::collect_kind(&self.store, owner, kind, limits.soft, now).await?;
        }
        Ok(total)
    }

    /// Collects expired memories, ordinary ones unused past the retention, and
    /// every kind over its soft limit (by value; pinned memories stay).
    pub async fn collect(&self, now: DateTime<Utc>) -> Result<u64, MemoryError> {
        let stale_before = now - Duration::days(i64::from(self.config.retention_days));
        let stale = self.store.memories().collect(now, stale_before).await?;
        let over = gc::collect_over_soft(&self.store, self.config.hard_limit_pct, now).await?;
        Ok(stale + over)
    }
}

/// Lowercase text without spaces and punctuation, for exact-duplicate checks.
fn normalized(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// `existing` updated by its repetition `new`: the fuller wording, higher
/// importance, the later expiry, both sources.
fn merge(existing: &MemoryRecord, new: &NewMemory) -> NewMemory {
    let content = if new.content.chars().count() >= existing.content.chars().count() {
        new.content.clone()
    } else {
        existing.content.clone()
    };
    let mut sources: Vec<&str> = existing.source_ref.split_whitespace().collect();
    for s in new.source_ref.split_whitespace() {
        if !sources.contains(&s) {
            sources.push(s);
        }
    }
    let keep = sources.len().saturating_sub(MAX_SOURCES);
    let expires_at = match (existing.expires_at, new.expires_at) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
    NewMemory {
        kind: existing.kind,
        content,
        source_ref: sources[keep..].join(" "),
        importance: (existing.importance.max(new.importance) + 0.05).min(1.0),
        expires_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_store, MemoryKind};
    use switchboard_platform::{Platform, UserId};

    fn owner(user: i64) -> MemoryOwner {
        MemoryOwner::new(Platform::Telegram, UserId(user))
    }

    fn new(kind: MemoryKind, content: &str, source: &str) -> NewMemory {
        NewMemory {
            kind,
            content: content.into(),
            source_ref: source.into(),
            importance: 0.5,
            expires_at: None,
        }
    }

    #[tokio::test]
    async fn duplicates_merge_and_distinct_memories_add() {
        let (store, _dir) = test_store().await;
        let book = MemoryBook::new(store, MemoryConfig::default());
        let now = Utc::now();
        let a = book
            .save(
                owner(1),
                new(MemoryKind::Preference, "用户喜欢喝咖啡", "chat:s1#1-2"),
                now,
            )
            .await
            .unwrap();
        let b = book
            .save(
                owner(1),
                new(MemoryKind::Preference, "用户喜欢喝咖啡。", "chat:s2#5-6"),
                now,
            )
            .await
            .unwrap();
        assert_eq!(b, Saved::Merged(a.id()));
        let m = book
            .store()
            .memories()
            .get(owner(1), a.id())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(m.content, "用户喜欢喝咖啡。");
        assert_eq!(m.source_ref, "chat:s1#1-2 chat:s2#5-6");
        assert!(m.importance > 0.5);
        let c = book
            .save(
                owner(1),
                new(
                    MemoryKind::Preference,
                    "The user prefers concise answers",
                    "x",
                ),
                now,
            )
            .await
            .unwrap();
        let d = book
            .save(
                owner(1),
                new(
                    MemoryKind::Preference,
                    "The user prefers short, concise answers",
                    "y",
                ),
                now,
            )
            .await
            .unwrap();
        assert_eq!(d, Saved::Merged(c.id()));
        // Similar wording, different meaning: kept apart.
        assert!(matches!(
            book.save(
                owner(1),
                new(MemoryKind::Preference, "用户喜欢喝茶", "x"),
                now
            )
            .await
            .unwrap(),
            Saved::Added(_)
        ));
        // Another kind, another user, or another meaning: new memories.
        assert!(matches!(
            book.save(
                owner(1),
                new(MemoryKind::Decision, "用户喜欢喝咖啡", "x"),
                now
            )
            .await
            .unwrap(),
            Saved::Added(_)
        ));
        assert!(matches!(
            book.save(
                owner(2),
                new(MemoryKind::Preference, "用户喜欢喝咖啡", "x"),
                now
            )
            .await
            .unwrap(),
            Saved::Added(_)
        ));
        assert!(matches!(
            book.save(
                owner(1),
                new(MemoryKind::Preference, "用户讨厌下雨天", "x"),
                now
            )
            .await
            .unwrap(),
            Saved::Added(_)
        ));
    }
}
