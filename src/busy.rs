//! Counting work in flight (turns, background tasks, queued inputs) so callers
//! can wait until the gateway is idle — the console's piped mode needs it.

use std::sync::Arc;
use tokio::sync::watch;

/// A shared counter of work in flight.
#[derive(Debug, Clone)]
pub struct Busy(Arc<watch::Sender<usize>>);

impl Default for Busy {
    fn default() -> Self {
        Busy(Arc::new(watch::Sender::new(0)))
    }
}

impl Busy {
    /// Marks one unit of work; it ends when the guard drops.
    pub fn enter(&self) -> BusyGuard {
        self.0.send_modify(|n| *n += 1);
        BusyGuard(Arc::clone(&self.0))
    }

    pub fn count(&self) -> usize {
        *self.0.borrow()
    }

    /// Resolves once nothing is in flight.
    pub async fn idle(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we wait.
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

/// One unit of work in flight.
#[derive(Debug)]
pub struct BusyGuard(Arc<watch::Sender<usize>>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_waits_for_every_guard() {
        let busy = Busy::default();
        let a = busy.enter();
        let b = busy.enter();
        assert_eq!(busy.count(), 2);
        drop(a);
        let waiter = tokio::spawn({
            let busy = busy.clone();
            async move { busy.idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(b);
        waiter.await.unwrap();
        assert_eq!(busy.count(), 0);
    }
}
