//! How long calls waited in a [`crate::Pacer`] before going out: a histogram
//! of fixed buckets kept in atomics (a call records without a lock), read as
//! a [`WaitSnapshot`] when the operator's metrics are scraped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds: 5 ms doubling to ~82 s (the
/// core's latency histograms use the same), then +Inf.
const BOUNDS: [f64; 15] = [
    0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// Waits recorded so far.
#[derive(Debug, Default)]
pub struct WaitHistogram {
    /// One count per bucket of [`BOUNDS`], then the overflow (+Inf) bucket.
    counts: [AtomicU64; BOUNDS.len() + 1],
    sum_micros: AtomicU64,
}

/// A reading of a [`WaitHistogram`], in the shape metrics exporters take.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitSnapshot {
    /// `(upper bound in seconds, waits in this bucket)`, not cumulative; the
    /// last bound is `f64::INFINITY`.
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl WaitHistogram {
    /// Records one call's wait.
    pub fn record(&self, waited: Duration) {
        let seconds = waited.as_secs_f64();
        let bucket = BOUNDS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BOUNDS.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> WaitSnapshot {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let buckets = BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(counts.iter().copied())
            .collect();
        WaitSnapshot {
            buckets,
            count: counts.iter().sum(),
            sum_seconds: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_land_in_their_buckets_and_add_up() {
        let h = WaitHistogram::default();
        h.record(Duration::ZERO);
        h.record(Duration::from_millis(5));
        h.record(Duration::from_millis(30));
        h.record(Duration::from_secs(100));
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.buckets.len(), 16);
        assert_eq!(
            s.buckets[0],
            (0.005, 2),
            "0 and 5 ms: at most the first bound"
        );
        assert_eq!(s.buckets[3], (0.04, 1));
        assert_eq!(s.buckets[15], (f64::INFINITY, 1));
        assert!((s.sum_seconds - 100.035).abs() < 1e-9, "{}", s.sum_seconds);
    }
}
