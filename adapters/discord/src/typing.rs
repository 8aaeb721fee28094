//! Typing indicators: one renewal loop per channel from `Typing` until `Idle`.

use crate::rest::Rest;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Runs the typing loops. A Discord typing indicator lasts ~10 s or until the
/// bot posts, so it is renewed every `interval` while a turn runs.
pub(crate) struct Typing {
    rest: Arc<Rest>,
    loops: Mutex<HashMap<u64, (u64, CancellationToken)>>,
    next_generation: AtomicU64,
    interval: Duration,
    max: Duration,
    stop: CancellationToken,
}

impl Typing {
    pub fn new(
        rest: Arc<Rest>,
        interval: Duration,
        max: Duration,
        stop: CancellationToken,
    ) -> Self {
        Self {
            rest,
            loops: Mutex::new(HashMap::new()),
            next_generation: AtomicU64::new(0),
            interval,
            max,
            stop,
        }
    }

    /// Starts typing in `channel` unless it already types.
    pub fn start(self: &Arc<Self>, channel: u64) {
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let token = self.stop.child_token();
        {
            let mut loops = self.lock();
            if loops.contains_key(&channel) {
                return;
            }
            loops.insert(channel, (generation, token.clone()));
        }
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + this.max;
            loop {
                match this.rest.typing(channel).await {
                    Ok(()) => {}
                    Err(e) if e.is_status(403) || e.is_status(404) => {
                        tracing::debug!(channel, error = %e, "typing refused; not retrying");
                        break;
                    }
                    Err(e) => tracing::debug!(channel, error = %e, "typing failed"),
                }
                tokio::select! {
                    () = token.cancelled() => break,
                    () = tokio::time::sleep(this.interval) => {}
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
            }
            let mut loops = this.lock();
            if loops.get(&channel).is_some_and(|(g, _)| *g == generation) {
                loops.remove(&channel);
            }
        });
    }

    /// Stops typing in `channel` (the indicator fades by itself within seconds).
    pub fn stop(&self, channel: u64) {
        if let Some((_, token)) = self.lock().remove(&channel) {
            token.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, (u64, CancellationToken)>> {
        self.loops.lock().unwrap_or_else(|p| p.into_inner())
    }
}
