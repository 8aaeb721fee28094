//! Replacing pooled connections after a persistent storage failure: a SQLite
//! connection opened while its file was read-only stays read-only after the
//! permissions return, so connections opened before the failure are closed
//! when next acquired and fresh ones are opened instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When the pool's connections were last declared stale.
#[derive(Debug)]
pub(crate) struct Recycle {
    base: Instant,
    /// Nanoseconds after `base` of the last [`Recycle::mark`]; 0 for never.
    mark: AtomicU64,
}

impl Default for Recycle {
    fn default() -> Self {
        Recycle {
            base: Instant::now(),
            mark: AtomicU64::new(0),
        }
    }
}

impl Recycle {
    /// Every connection opened until now is to be replaced.
    pub(crate) fn mark(&self) {
        let nanos = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.mark.fetch_max(nanos.max(1), Ordering::Relaxed);
    }

    /// Whether a connection opened `age` ago predates the last mark.
    pub(crate) fn is_stale(&self, age: Duration) -> bool {
        let mark = self.mark.load(Ordering::Relaxed);
        if mark == 0 {
            return false;
        }
        let opened = self.base.elapsed().saturating_sub(age);
        u64::try_from(opened.as_nanos()).unwrap_or(u64::MAX) <= mark
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_connections_opened_before_the_mark_are_stale() {
        let r = Recycle::default();
        assert!(!r.is_stale(Duration::from_secs(3600)), "never marked");
        r.mark();
        // Opened an hour ago: before the mark.
        assert!(r.is_stale(Duration::from_secs(3600)));
        std::thread::sleep(Duration::from_millis(2));
        // Opened just now, after the mark.
        assert!(!r.is_stale(Duration::ZERO));
    }
}
