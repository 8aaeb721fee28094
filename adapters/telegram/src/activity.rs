//! Typing indicators: `sendChatAction typing` repeated every few seconds per
//! chat until the core says the turn is over.

use crate::send::Outbound;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use switchboard_platform::ChatAddress;
use tokio_util::sync::CancellationToken;

/// Running typing loops, one per chat (and topic), each with the number of
/// turns it stands for: in a group, several users' turns run at once and the
/// indicator lasts until the last of them ends.
#[derive(Default)]
pub(crate) struct Typing {
    active: Mutex<HashMap<ChatAddress, Loop>>,
    generation: AtomicU64,
}

struct Loop {
    generation: u64,
    cancel: CancellationToken,
    turns: usize,
}

impl Typing {
    /// Counts a turn in `chat` and registers a loop for it; `None` when one
    /// is already running there.
    pub fn begin(
        &self,
        chat: ChatAddress,
        parent: &CancellationToken,
    ) -> Option<(u64, CancellationToken)> {
        let mut active = self.lock();
        if let Some(running) = active.get_mut(&chat) {
            running.turns += 1;
            return None;
        }
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        let cancel = parent.child_token();
        active.insert(
            chat,
            Loop {
                generation,
                cancel: cancel.clone(),
                turns: 1,
            },
        );
        Some((generation, cancel))
    }

    /// A turn in `chat` ended: the loop stops with the last one.
    pub fn end(&self, chat: &ChatAddress) {
        let mut active = self.lock();
        let Some(running) = active.get_mut(chat) else {
            return;
        };
        running.turns = running.turns.saturating_sub(1);
        if running.turns == 0 {
            running.cancel.cancel();
            active.remove(chat);
        }
    }

    /// A loop ended by itself (time cap): forget it unless it was replaced,
    /// with its count, so a turn that never said it ended cannot keep the
    /// next one's indicator from starting.
    pub fn finished(&self, chat: &ChatAddress, generation: u64) {
        let mut active = self.lock();
        if active.get(chat).is_some_and(|l| l.generation == generation) {
            active.remove(chat);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ChatAddress, Loop>> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Sends `typing` every `interval` until `cancel` or `max` elapses, each at
/// the pacer's lowest priority (skipped while messages wait). Failures are
/// logged and do not stop the loop: the indicator is best effort.
pub(crate) async fn typing_loop(
    out: &Outbound,
    chat: ChatAddress,
    interval: Duration,
    max: Duration,
    cancel: CancellationToken,
) {
    let deadline = tokio::time::Instant::now() + max;
    loop {
        match out.typing(&chat).await {
            Ok(true) => {}
            // Messages are on their way: they matter more, and the next
            // renewal tries again.
            Ok(false) => tracing::trace!(chat = chat.chat.0, "typing gave way to messages"),
            Err(e) => tracing::debug!(chat = chat.chat.0, error = %e, "sendChatAction failed"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ChatId, Platform};

    #[test]
    fn the_indicator_lasts_until_the_last_turn_in_the_chat_ends() {
        let typing = Typing::default();
        let parent = CancellationToken::new();
        let group = ChatAddress::new(Platform::Telegram, ChatId(-5), None);
        let (generation, cancel) = typing.begin(group, &parent).unwrap();
        assert!(typing.begin(group, &parent).is_none(), "one loop per chat");
        typing.end(&group);
        assert!(!cancel.is_cancelled(), "the other turn still runs");
        typing.end(&group);
        assert!(cancel.is_cancelled());
        typing.end(&group); // an extra end changes nothing
        let (_, next) = typing.begin(group, &parent).unwrap();
        typing.finished(&group, generation); // the old loop's end is ignored
        assert!(!next.is_cancelled());
        assert!(typing.begin(group, &parent).is_none());
    }
}
