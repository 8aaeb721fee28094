//! The turn deadline (`TURN_DEADLINE_SECS`): the total time one turn may take,
//! model streaming and tools included. Time spent waiting for a person to
//! decide an approval does not count (it has its own `APPROVAL_TIMEOUT`).
//! On tokio's clock, so tests run it on a paused one.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

pub(crate) struct Deadline {
    at: Mutex<Instant>,
    budget: Duration,
}

impl Deadline {
    /// A deadline `budget` from now.
    pub(crate) fn start(budget: Duration) -> Deadline {
        Deadline {
            at: Mutex::new(Instant::now() + budget),
            budget,
        }
    }

    fn at(&self) -> Instant {
        *self.at.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn passed(&self) -> bool {
        Instant::now() >= self.at()
    }

    /// Resolves once the deadline has passed (following any extension).
    pub(crate) async fn reached(&self) {
        loop {
            let at = self.at();
            tokio::time::sleep_until(at).await;
            if Instant::now() >= self.at() {
                return;
            }
        }
    }

    /// Runs `wait` (a person's decision) with the clock stopped: the deadline
    /// moves on by however long it took.
    pub(crate) async fn excluding<F>(&self, wait: F) -> F::Output
    where
        F: Future,
    {
        let began = Instant::now();
        let out = wait.await;
        let waited = began.elapsed();
        *self.at.lock().unwrap_or_else(|p| p.into_inner()) += waited;
        out
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
    async fn passes_at_its_budget_and_an_approval_wait_does_not_count() {
        let d = Deadline::start(Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!(!d.passed());
        d.excluding(tokio::time::sleep(Duration::from_secs(100)))
            .await;
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(!d.passed(), "the 100 s approval wait is not counted");
        let began = Instant::now();
        d.reached().await;
        assert_eq!(began.elapsed(), Duration::from_secs(1));
        assert!(d.passed());
    }
}
