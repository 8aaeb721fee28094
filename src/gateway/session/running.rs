//! The turn a session worker runs now, as `/stop` sees it: its cancel token
//! while it runs.

use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The cancel token of the turn a session worker runs, if any.
#[derive(Clone, Default)]
pub(crate) struct RunningTurn(Arc<Mutex<Option<CancellationToken>>>);

impl RunningTurn {
    /// A token for the turn starting now (a child of `parent`, the shutdown).
    pub(crate) fn begin(&self, parent: &CancellationToken) -> CancellationToken {
        let token = parent.child_token();
        *self.slot() = Some(token.clone());
        token
    }

    /// The turn ended: `/stop` has nothing to cancel until the next begins.
    pub(crate) fn end(&self) {
        self.slot().take();
    }

    /// Whether a turn runs now (and was not stopped yet).
    pub(crate) fn is_running(&self) -> bool {
        self.slot().as_ref().is_some_and(|t| !t.is_cancelled())
    }

    /// Cancels the running turn. False when none runs (or it was already stopped).
    pub(crate) fn stop(&self) -> bool {
        match self.slot().as_ref() {
            Some(token) if !token.is_cancelled() => {
                token.cancel();
                true
            }
            _ => false,
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_cancels_only_the_running_turn_once() {
        let shutdown = CancellationToken::new();
        let running = RunningTurn::default();
        assert!(!running.stop(), "no turn yet");
        let turn = running.begin(&shutdown);
        assert!(running.stop());
        assert!(turn.is_cancelled() && !shutdown.is_cancelled());
        assert!(!running.stop(), "already stopped");
        running.end();
        let next = running.begin(&shutdown);
        assert!(!next.is_cancelled(), "the next turn starts afresh");
    }
}
