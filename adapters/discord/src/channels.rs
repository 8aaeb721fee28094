//! Channel kinds learned from look-ups and interactions; a failed look-up is
//! remembered only briefly, so one network blip does not misfile a thread.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A guild channel's type and, for a thread, its parent channel.
pub(crate) type Kind = (u8, Option<u64>);

/// Entries kept before the cache is reset.
const CAPACITY: usize = 50_000;

#[derive(Debug, Clone, Copy)]
enum Entry {
    Known(Kind),
    /// The last look-up failed; do not ask again before `until`.
    Failed {
        until: Instant,
    },
}

/// What the cache says about a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cached {
    Known(Kind),
    /// A look-up failed a moment ago: treat it as a plain channel for now.
    RecentlyFailed,
    /// Look it up.
    Unknown,
}

/// The channel-kind cache shared by the gateway handler and the pump.
pub(crate) struct ChannelKinds {
    entries: Mutex<HashMap<u64, Entry>>,
    retry: Duration,
}

impl ChannelKinds {
    /// `retry`: how long a failed look-up is not repeated.
    pub fn new(retry: Duration) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            retry,
        }
    }

    pub fn get(&self, id: u64) -> Cached {
        match self.lock().get(&id) {
            Some(Entry::Known(kind)) => Cached::Known(*kind),
            Some(Entry::Failed { until }) if Instant::now() < *until => Cached::RecentlyFailed,
            Some(Entry::Failed { .. }) | None => Cached::Unknown,
        }
    }

    /// A look-up or an interaction told us the channel's kind.
    pub fn learned(&self, id: u64, kind: Kind) {
        self.insert(id, Entry::Known(kind));
    }

    /// A look-up failed (network, 5xx, 429s, timeout): ask again after `retry`.
    /// Never overrides a kind learned meanwhile.
    pub fn failed(&self, id: u64) {
        if matches!(self.lock().get(&id), Some(Entry::Known(_))) {
            return;
        }
        let until = Instant::now() + self.retry;
        self.insert(id, Entry::Failed { until });
    }

    fn insert(&self, id: u64, entry: Entry) {
        let mut entries = self.lock();
        if entries.len() >= CAPACITY && !entries.contains_key(&id) {
            entries.clear();
        }
        entries.insert(id, entry);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREAD: (u8, Option<u64>) = (11, Some(7));

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_remembered_only_until_the_retry() {
        let kinds = ChannelKinds::new(Duration::from_secs(10));
        assert_eq!(kinds.get(1), Cached::Unknown);
        kinds.failed(1);
        assert_eq!(kinds.get(1), Cached::RecentlyFailed);
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(kinds.get(1), Cached::RecentlyFailed);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(kinds.get(1), Cached::Unknown, "time to ask again");
        kinds.learned(1, THREAD);
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(kinds.get(1), Cached::Known(THREAD), "a success is kept");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_never_hides_a_known_kind() {
        let kinds = ChannelKinds::new(Duration::from_secs(10));
        kinds.learned(2, THREAD);
        kinds.failed(2);
        assert_eq!(kinds.get(2), Cached::Known(THREAD));
        // An interaction may teach the kind while a look-up is failing.
        kinds.failed(3);
        kinds.learned(3, THREAD);
        assert_eq!(kinds.get(3), Cached::Known(THREAD));
        // Without a retry delay a failure is not remembered at all.
        let eager = ChannelKinds::new(Duration::ZERO);
        eager.failed(4);
        assert_eq!(eager.get(4), Cached::Unknown);
    }
}
