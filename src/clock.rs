//! Wall-clock time for deadlines that live in the database (approval expiry),
//! behind a trait so tests can move time forward instead of waiting: a paused
//! tokio clock cannot do that here, since database drivers keep their own
//! timeouts on the same clock.

use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Where "now" comes from.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The system clock plus an offset that only grows: a clock a test advances.
#[derive(Debug, Default)]
pub struct ManualClock {
    offset_ms: AtomicI64,
}

impl ManualClock {
    /// Moves this clock `by` into the future.
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.offset_ms.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + chrono::Duration::milliseconds(self.offset_ms.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_runs_ahead_by_what_it_was_advanced() {
        let clock = ManualClock::default();
        clock.advance(Duration::from_secs(600));
        let ahead = clock.now() - Utc::now();
        assert!(ahead >= chrono::Duration::seconds(599), "{ahead}");
        assert!(ahead <= chrono::Duration::seconds(601), "{ahead}");
    }
}
