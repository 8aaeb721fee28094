//! The turn deadline (`TURN_DEADLINE_SECS`): the total time one turn may take,
//! model streaming and tools included. A turn paused on an approval has ended:
//! waiting for the decision does not count (it has its own `APPROVAL_TIMEOUT`),
//! and the resumed turn starts a deadline of its own.
//! On tokio's clock, so tests run it on a paused one.

use std::time::Duration;
use tokio::time::Instant;

pub(crate) struct Deadline {
    at: Instant,
    budget: Duration,
}

impl Deadline {
    /// A deadline `budget` from now.
    pub(crate) fn start(budget: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + budget,
            budget,
        }
    }

    pub(crate) fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    /// Resolves once the deadline has passed.
    pub(crate) async fn reached(&self) {
        tokio::time::sleep_until(self.at).await;
    }

    /// What the user is told when the turn stops here.
    pub(crate) fn notice(&self) -> String {
        format!(
            "⏱️ I stopped: this turn reached its time limit of {} s (TURN_DEADLINE_SECS). \
             Ask me to continue, or narrow the request.",
            self.budget.as_secs()
        )
    }
}

impl Deadline {
    /// The turn's final text: what its finished rounds said, then the notice.
    pub(crate) fn stop_text(&self, turn_text: &str) -> String {
        if turn_text.trim().is_empty() {
            self.notice()
        } else {
            format!(
                "{turn_text}{}{}",
                super::model_call::ROUND_SEPARATOR,
                self.notice()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn passes_at_its_budget() {
        let d = Deadline::start(Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(!d.passed());
        let began = Instant::now();
        d.reached().await;
        assert_eq!(began.elapsed(), Duration::from_secs(1));
        assert!(d.passed());
    }
}
