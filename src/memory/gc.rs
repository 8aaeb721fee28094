//! Garbage collection by value: when a kind is over its limit, expired
//! memories go first, then the lowest `importance × recency × use`, never
//! simply the oldest; pinned memories are never collected. Soft limit: collect
//! in the background; hard limit: collect before the insert, refuse it when
//! nothing can go.

use super::recall::recency;
use crate::store::{GcCandidate, MemoryKind, MemoryOwner, Store, StoreError};
use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Owners collected per kind by one background pass at most.
const OWNERS_PER_PASS: u32 = 200;

/// The limits of one kind for one user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Beyond this, the background collection trims the kind back to it.
    pub soft: u32,
    /// At this, an insert first collects down to the soft limit, and is
    /// refused when everything left is pinned.
    pub hard: u32,
}

impl Limits {
    /// The limits of `kind`: its cap, and `hard_pct` percent of it (at least one more).
    pub fn of(kind: MemoryKind, hard_pct: u32) -> Limits {
        let soft = kind.cap();
        let hard = u32::try_from(u64::from(soft) * u64::from(hard_pct) / 100)
            .unwrap_or(u32::MAX)
            .max(soft.saturating_add(1));
        Limits { soft, hard }
    }
}

/// The value of keeping a memory: importance (with a floor, so an unrated
/// memory still counts) × recency of its last update or recall (30-day
/// half-life) × use (grows with the log of how often it was recalled).
pub fn value(c: &GcCandidate, now: DateTime<Utc>) -> f64 {
    let importance = 0.1 + c.importance.clamp(0.0, 1.0);
    let last = c.last_access.map_or(c.updated_at, |a| a.max(c.updated_at));
    let used = 1.0 + (1.0 + c.access_count.max(0) as f64).ln();
    importance * recency(last, now) * used
}

/// The ids to collect so that `keep` memories remain, pinned ones counted:
/// the lowest values first (ties: the older id).
pub fn victims(
    mut candidates: Vec<GcCandidate>,
    pinned: u32,
    keep: u32,
    now: DateTime<Utc>,
) -> Vec<i64> {
    let room = usize::try_from(keep.saturating_sub(pinned)).unwrap_or(usize::MAX);
    if candidates.len() <= room {
        return Vec::new();
    }
    let excess = candidates.len() - room;
    candidates.sort_by(|a, b| {
        value(a, now)
            .total_cmp(&value(b, now))
            .then(a.id.cmp(&b.id))
    });
    candidates.into_iter().take(excess).map(|c| c.id).collect()
}

/// Collects the owner's memories of `kind` down to `keep`: expired ones, then
/// the least valuable. Returns how many went.
pub async fn collect_kind(
    store: &Store,
    owner: MemoryOwner,
    kind: MemoryKind,
    keep: u32,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let expired = store.memories().delete_expired(owner, kind, now).await?;
    let (candidates, pinned) = store.memories().gc_candidates(owner, kind, now).await?;
    let ids = victims(candidates, pinned, keep, now);
    let dropped = store.memories().delete_unpinned(owner, &ids).await?;
    if expired + dropped > 0 {
        tracing::debug!(
            kind = kind.as_str(),
            expired,
            dropped,
            "memories collected by value"
        );
    }
    Ok(expired + dropped)
}

/// Kinds of owners that passed their soft limit, for the background pass.
#[derive(Debug, Clone, Default)]
pub struct OverSoft(Arc<Mutex<HashSet<(MemoryOwner, MemoryKind)>>>);

impl OverSoft {
    pub fn mark(&self, owner: MemoryOwner, kind: MemoryKind) {
        if let Ok(mut set) = self.0.lock() {
            set.insert((owner, kind));
        }
    }

    /// Takes every mark.
    pub fn take(&self) -> Vec<(MemoryOwner, MemoryKind)> {
        self.0
            .lock()
            .map(|mut set| set.drain().collect())
            .unwrap_or_default()
    }
}

/// The background pass over every owner: each kind over its soft limit is
/// trimmed back to it. Returns how many memories went.
pub async fn collect_over_soft(
    store: &Store,
    hard_pct: u32,
    now: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let mut total = 0;
    for kind in MemoryKind::ALL {
        let limits = Limits::of(kind, hard_pct);
        for owner in store
            .memories()
            .owners_over(kind, limits.soft, OWNERS_PER_PASS)
            .await?
        {
            total += collect_kind(store, owner, kind, limits.soft, now).await?;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn candidate(
        id: i64,
        importance: f64,
        uses: i64,
        age_days: i64,
        now: DateTime<Utc>,
    ) -> GcCandidate {
        GcCandidate {
            id,
            importance,
            access_count: uses,
            last_access: (uses > 0).then(|| now - Duration::days(1)),
            updated_at: now - Duration::days(age_days),
        }
    }

    #[test]
    fn value_weighs_importance_recency_and_use_not_age_alone() {
        let now = Utc::now();
        let old_but_valued = candidate(1, 0.9, 12, 200, now);
        let new_but_trivial = candidate(2, 0.1, 0, 2, now);
        assert!(value(&old_but_valued, now) > value(&new_but_trivial, now));
        // Without recalls the older of two equal memories is worth less.
        assert!(
            value(&candidate(3, 0.5, 0, 60, now), now) < value(&candidate(4, 0.5, 0, 1, now), now)
        );
        let ids = victims(vec![old_but_valued, new_but_trivial], 0, 1, now);
        assert_eq!(ids, [2]);
    }

    #[test]
    fn pinned_memories_take_room_but_are_never_victims() {
        let now = Utc::now();
        let all = vec![candidate(1, 0.5, 0, 1, now), candidate(2, 0.6, 0, 1, now)];
        assert_eq!(victims(all.clone(), 2, 3, now), [1]);
        assert_eq!(victims(all.clone(), 3, 3, now), [1, 2]);
        assert!(victims(all, 0, 2, now).is_empty());
    }

    #[test]
    fn hard_limit_is_a_percentage_of_the_soft_one() {
        assert_eq!(
            Limits::of(MemoryKind::Fact, 150),
            Limits { soft: 50, hard: 75 }
        );
        assert_eq!(Limits::of(MemoryKind::Persona, 100).hard, 6);
    }
}
