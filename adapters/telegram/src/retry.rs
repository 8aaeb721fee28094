//! Failed `getUpdates` calls: an exponential backoff with a cap, and logs
//! that say what is wrong once per streak of failures (then every
//! [`LOG_EVERY`]-th failure, and once when polling works again), not on
//! every retry.

use std::time::Duration;
use teloxide::{ApiError, RequestError};
use tokio::time::Instant;

use crate::errors::UpdatesError;

/// A streak of failures is logged at warn level on its first failure and
/// on every `LOG_EVERY`-th after it.
pub(crate) const LOG_EVERY: u32 = 10;

/// The waits between failed polls: `initial`, doubled each time up to `max`.
#[derive(Debug)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
    failures: u32,
    since: Option<Instant>,
}

/// What to do about one failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failure {
    /// How long to wait before the next poll.
    pub wait: Duration,
    /// Failures in this streak so far, this one included.
    pub count: u32,
    /// Whether this one is logged at warn level.
    pub loud: bool,
}

/// A streak of failures that just ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recovered {
    pub failures: u32,
    pub down_for: Duration,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Backoff {
        let initial = initial.max(Duration::from_millis(1));
        Backoff {
            initial,
            max: max.max(initial),
            next: initial,
            failures: 0,
            since: None,
        }
    }

    pub(crate) fn failed(&mut self) -> Failure {
        self.failures = self.failures.saturating_add(1);
        self.since.get_or_insert_with(Instant::now);
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        Failure {
            wait,
            count: self.failures,
            loud: self.failures == 1 || self.failures.is_multiple_of(LOG_EVERY),
        }
    }

    /// A poll worked: the next failure waits `initial` again.
    pub(crate) fn succeeded(&mut self) -> Option<Recovered> {
        self.next = self.initial;
        let failures = std::mem::take(&mut self.failures);
        let since = self.since.take()?;
        Some(Recovered {
            failures,
            down_for: since.elapsed(),
        })
    }
}

/// What the operator should know about a failed poll beyond its error.
pub(crate) fn hint(e: &UpdatesError) -> &'static str {
    match e {
        UpdatesError::Request(RequestError::Api(ApiError::TerminatedByOtherGetUpdates)) => {
            "another process is polling with this bot token (only one may): stop the other instance"
        }
        UpdatesError::Request(RequestError::Api(ApiError::CantGetUpdates)) => {
            "a webhook is set for this bot token (by another instance?): polling and a webhook exclude each other"
        }
        UpdatesError::Request(RequestError::Network(_) | RequestError::Io(_)) => {
            "the Telegram Bot API cannot be reached"
        }
        UpdatesError::Status(_) => "the Telegram Bot API answered with an HTTP error",
        _ => "Telegram refused or garbled the poll",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_start_over_after_a_success() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(700));
        let waits: Vec<u64> = (0..6).map(|_| b.failed().wait.as_millis() as u64).collect();
        assert_eq!(waits, [100, 200, 400, 700, 700, 700]);
        let recovered = b.succeeded().unwrap();
        assert_eq!(recovered.failures, 6);
        assert_eq!(b.failed().wait, Duration::from_millis(100));
        assert!(Backoff::new(Duration::ZERO, Duration::ZERO).failed().wait > Duration::ZERO);
    }

    #[test]
    fn a_streak_is_logged_on_its_first_failure_then_every_tenth() {
        let mut b = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        let loud: Vec<u32> = (0..25)
            .map(|_| b.failed())
            .filter(|f| f.loud)
            .map(|f| f.count)
            .collect();
        assert_eq!(loud, [1, 10, 20]);
        assert!(b.succeeded().is_some());
        assert!(b.succeeded().is_none(), "nothing to report twice");
        assert!(b.failed().loud, "a new streak is logged again");
    }
}
