//! What keeps accepted messages and answered exchanges across failures:
//! this process's id (the owner of its inbox rows while it is alive), whether
//! storage just failed, and the local spool used meanwhile.

use crate::gateway::spool::Spool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// This process's claim on what it keeps, and how it keeps it while storage
/// is down.
pub(crate) struct Durability {
    /// This process's id: owner of its inbox rows, resumed-turn marks and
    /// tasks while it is alive (see `store::LivenessClaim`).
    pub(crate) instance: crate::domain::ProcessId,
    /// Whether storage just failed (the inbound path then skips what it can).
    pub(crate) storage: StorageHealth,
    /// Where accepted messages are kept while storage is down.
    pub(crate) spool: Option<Spool>,
}

/// After a storage failure, how long the inbound path skips what it can do
/// without storage (the inbox row, asking about an admission it remembers)
/// instead of waiting out a timeout on every message.
const RECHECK_AFTER: Duration = Duration::from_secs(5);

/// Whether storage failed just now: a breaker that closes again by itself
/// after [`RECHECK_AFTER`] or at the first success.
#[derive(Debug, Default)]
pub(crate) struct StorageHealth {
    down_until: Mutex<Option<Instant>>,
}

impl StorageHealth {
    pub(crate) fn failed(&self) {
        *self.slot() = Some(Instant::now() + RECHECK_AFTER);
    }

    pub(crate) fn worked(&self) {
        *self.slot() = None;
    }

    pub(crate) fn is_down(&self) -> bool {
        self.slot().is_some_and(|until| Instant::now() < until)
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.down_until.lock().unwrap_or_else(|p| p.into_inner())
    }
}
