//! Typing indicators: one renewal loop per channel while any turn in it runs,
//! started only once a turn has run for a moment, sent only when the bot's
//! quota has room to spare.

use crate::rest::Rest;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A channel's typing loop and the turns it types for.
struct Loop {
    /// `Typing` calls not yet matched by an `Idle`.
    turns: usize,
    generation: u64,
    token: CancellationToken,
}

/// When typing starts, how often it is renewed, and for how long at most.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    /// A turn answered within this costs no typing call.
    pub delay: Duration,
    pub interval: Duration,
    pub max: Duration,
}

/// Runs the typing loops. A Discord typing indicator lasts ~10 s or until the
/// bot posts, so it is renewed every `interval` while a turn runs. The first
/// call waits `delay` (a turn that ends first never types), and each call
/// gives way to messages: under a backlog renewals are skipped, not queued.
///
/// The indicator belongs to the channel, but turns belong to sessions (one per
/// user), so several turns can run in one channel: each `Typing` counts one
/// turn in, each `Idle` one out, and the loop stops when the last turn in the
/// channel is idle. A stray `Idle` (no turn running) is ignored. When a loop
/// ends by itself (`max` reached, typing refused) its count is dropped too,
/// so a `Typing` that never got its `Idle` cannot keep a channel typing.
pub(crate) struct Typing {
    rest: Arc<Rest>,
    loops: Mutex<HashMap<u64, Loop>>,
    next_generation: AtomicU64,
    pace: Pace,
    stop: CancellationToken,
}

impl Typing {
    pub fn new(rest: Arc<Rest>, pace: Pace, stop: CancellationToken) -> Self {
        Self {
            rest,
            loops: Mutex::new(HashMap::new()),
            next_generation: AtomicU64::new(0),
            pace,
            stop,
        }
    }

    /// A turn in `channel` started: types there unless it already does.
    pub fn start(self: &Arc<Self>, channel: u64) {
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
        let token = self.stop.child_token();
        {
            let mut loops = self.lock();
            if let Some(running) = loops.get_mut(&channel) {
                running.turns += 1;
                return;
            }
            loops.insert(
                channel,
                Loop {
                    turns: 1,
                    generation,
                    token: token.clone(),
                },
            );
        }
        let this = Arc::clone(self);
        tokio::spawn(async move {
            let Pace {
                delay,
                interval,
                max,
            } = this.pace;
            let deadline = tokio::time::Instant::now() + max;
            let ended_early = tokio::select! {
                () = token.cancelled() => true,
                () = tokio::time::sleep(delay) => false,
            };
            while !ended_early && !token.is_cancelled() {
                match this.rest.typing(channel).await {
                    Ok(true) => {}
                    Ok(false) => tracing::trace!(channel, "typing gave way to messages"),
                    Err(e) if e.is_status(403) || e.is_status(404) => {
                        tracing::debug!(channel, error = %e, "typing refused; not retrying");
                        break;
                    }
                    Err(e) => tracing::debug!(channel, error = %e, "typing failed"),
                }
                tokio::select! {
                    () = token.cancelled() => break,
                    () = tokio::time::sleep(interval) => {}
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
            }
            let mut loops = this.lock();
            if loops
                .get(&channel)
                .is_some_and(|l| l.generation == generation)
            {
                loops.remove(&channel);
            }
        });
    }

    /// A turn in `channel` ended: stops typing there once no turn runs (the
    /// indicator fades by itself within seconds).
    pub fn stop(&self, channel: u64) {
        let mut loops = self.lock();
        let Some(running) = loops.get_mut(&channel) else {
            return;
        };
        running.turns = running.turns.saturating_sub(1);
        if running.turns == 0 {
            if let Some(ended) = loops.remove(&channel) {
                ended.token.cancel();
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Loop>> {
        self.loops.lock().unwrap_or_else(|p| p.into_inner())
    }
}
