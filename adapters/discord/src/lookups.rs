//! Facts learned from REST look-ups (channel kinds, the bot's roles per
//! guild); a failed look-up is remembered only briefly, so one network blip
//! does not misfile a thread or miss a role mention for long.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A guild channel's type and, for a thread, its parent channel.
pub(crate) type Kind = (u8, Option<u64>);

/// Entries kept before the cache is reset.
const CAPACITY: usize = 50_000;

/// The role ids the bot holds in a guild.
pub(crate) type Roles = Vec<u64>;

#[derive(Debug, Clone)]
enum Entry<V> {
    Known(V),
    /// The last look-up failed; do not ask again before `until`.
    Failed {
        until: Instant,
    },
}

/// What the cache says about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cached<V> {
    Known(V),
    /// A look-up failed a moment ago: go on without it for now.
    RecentlyFailed,
    /// Look it up.
    Unknown,
}

/// A look-up cache by snowflake, shared by the gateway handler and the pump.
pub(crate) struct Lookups<V> {
    entries: Mutex<HashMap<u64, Entry<V>>>,
    retry: Duration,
}

/// Channel kinds, by channel id.
pub(crate) type ChannelKinds = Lookups<Kind>;
/// The bot's roles, by guild id.
pub(crate) type BotRoles = Lookups<Roles>;

impl<V> Lookups<V>
where
    V: Clone,
{
    /// `retry`: how long a failed look-up is not repeated.
    pub fn new(retry: Duration) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            retry,
        }
    }

    pub fn get(&self, id: u64) -> Cached<V> {
        match self.lock().get(&id) {
            Some(Entry::Known(value)) => Cached::Known(value.clone()),
            Some(Entry::Failed { until }) if Instant::now() < *until => Cached::RecentlyFailed,
            Some(Entry::Failed { .. }) | None => Cached::Unknown,
        }
    }

    /// A look-up (or, for a channel, an interaction) told us the answer.
    pub fn learned(&self, id: u64, value: V) {
        self.insert(id, Entry::Known(value));
    }

    /// A look-up failed (network, 4xx/5xx, 429s, timeout): ask again after
    /// `retry`. Never overrides an answer learned meanwhile.
    pub fn failed(&self, id: u64) {
        if matches!(self.lock().get(&id), Some(Entry::Known(_))) {
            return;
        }
        let until = Instant::now() + self.retry;
        self.insert(id, Entry::Failed { until });
    }

    fn insert(&self, id: u64, entry: Entry<V>) {
        let mut entries = self.lock();
        if entries.len() >= CAPACITY && !entries.contains_key(&id) {
            entries.clear();
        }
        entries.insert(id, entry);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry<V>>> {
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
