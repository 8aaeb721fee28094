//! Typing indicators: `sendChatAction typing` repeated every few seconds per
//! chat until the core says the turn is over.

use crate::send::Outbound;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use switchboard_platform::ChatAddress;
use tokio_util::sync::CancellationToken;

/// Running typing loops, one per chat (and topic).
#[derive(Default)]
pub(crate) struct Typing {
    active: Mutex<HashMap<ChatAddress, (u64, CancellationToken)>>,
    generation: AtomicU64,
}

impl Typing {
    /// Registers a loop for `chat`; `None` when one is already running.
    pub fn begin(
        &self,
        chat: ChatAddress,
        parent: &CancellationToken,
    ) -> Option<(u64, CancellationToken)> {
        let mut active = self.lock();
        if active.contains_key(&chat) {
            return None;
        }
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let token = parent.child_token();
        active.insert(chat, (generation, token.clone()));
        Some((generation, token))
    }

    /// Stops the loop for `chat`, if any.
    pub fn end(&self, chat: &ChatAddress) {
        if let Some((_, token)) = self.lock().remove(chat) {
            token.cancel();
        }
    }

    /// A loop ended by itself (time cap): forget it unless it was replaced.
    pub fn finished(&self, chat: &ChatAddress, generation: u64) {
        let mut active = self.lock();
        if active.get(chat).is_some_and(|(g, _)| *g == generation) {
            active.remove(chat);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ChatAddress, (u64, CancellationToken)>> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Sends `typing` every `interval` until `cancel` or `max` elapses.
/// Failures are logged and do not stop the loop: the indicator is best effort.
pub(crate) async fn typing_loop(
    out: &Outbound,
    chat: ChatAddress,
    interval: Duration,
    max: Duration,
    cancel: CancellationToken,
) {
    let deadline = tokio::time::Instant::now() + max;
    loop {
        if let Err(e) = out.typing(&chat).await {
            tracing::debug!(chat = chat.chat.0, error = %e, "sendChatAction failed");
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return;
        }
    }
}
