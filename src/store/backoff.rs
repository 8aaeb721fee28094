//! The wait between attempts at storage that is down: 1 s, doubling up to
//! 30 s, cut short by shutdown. Shared by everything that holds work until
//! the database answers again (held inputs, turn claims, task results).

use std::time::Duration;
use tokio_util::sync::CancellationToken;

const FIRST: Duration = Duration::from_secs(1);
const MAX: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { next: FIRST }
    }
}

impl Backoff {
    /// How long the next [`Backoff::wait`] sleeps (for logs).
    pub(crate) fn next_wait(&self) -> Duration {
        self.next
    }

    /// Sleeps the next wait; `false` when `shutdown` comes first.
    pub(crate) async fn wait(&mut self, shutdown: &CancellationToken) -> bool {
        let wait = self.next;
        self.next = (self.next * 2).min(MAX);
        tokio::select! {
            () = tokio::time::sleep(wait) => true,
            () = shutdown.cancelled() => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waits_double_up_to_thirty_seconds_and_end_at_shutdown() {
        let shutdown = CancellationToken::new();
        let mut backoff = Backoff::default();
        let mut waits = Vec::new();
        for _ in 0..7 {
            waits.push(backoff.next_wait().as_secs());
            assert!(backoff.wait(&shutdown).await);
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        shutdown.cancel();
        assert!(!backoff.wait(&shutdown).await);
    }
}
