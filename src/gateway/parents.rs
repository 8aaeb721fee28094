//! The channel each thread was opened in, where threads are chats of their
//! own (Discord): learned from messages and presses, kept in the database
//! and read at start, so a thread without a `CHATS_FILE` entry of its own
//! takes its channel's — also for a schedule or a resumed turn after a
//! restart, before anyone wrote in the thread again.

use crate::store::Store;
use std::collections::HashMap;
use std::sync::RwLock;
use switchboard_platform::{ChatId, Platform};

#[derive(Debug, Default)]
pub(crate) struct Parents {
    known: RwLock<HashMap<(Platform, ChatId), ChatId>>,
}

impl Parents {
    /// Reads the recorded threads (a failure is logged: the map fills again
    /// from the next messages).
    pub(super) async fn load(&self, store: &Store) {
        match store.chat_parents().await {
            Ok(rows) => {
                let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
                known.extend(
                    rows.into_iter()
                        .map(|(p, chat, parent)| ((p, chat), parent)),
                );
            }
            Err(e) => tracing::warn!(error = %e, "could not read the threads' channels"),
        }
    }

    /// The channel `chat` was opened in, when it is a known thread.
    pub(super) fn of(&self, platform: Platform, chat: ChatId) -> Option<ChatId> {
        let known = self.known.read().unwrap_or_else(|p| p.into_inner());
        known.get(&(platform, chat)).copied()
    }

    /// Notes that `chat` is a thread of `parent`; a new or changed pairing
    /// is written in the background (the router never waits on it).
    pub(super) fn note(&self, store: &Store, platform: Platform, chat: ChatId, parent: ChatId) {
        {
            let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
            if known.insert((platform, chat), parent) == Some(parent) {
                return;
            }
        }
        let store = store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.put_chat_parent(platform, chat, parent).await {
                tracing::warn!(error = %e, chat = chat.0, "could not record a thread's channel");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_noted_thread_is_known_to_the_next_start() {
        let (store, _dir) = crate::store::test_store().await;
        let first = Parents::default();
        first.note(&store, Platform::Discord, ChatId(13), ChatId(11));
        assert_eq!(first.of(Platform::Discord, ChatId(13)), Some(ChatId(11)));
        // The row is written in the background.
        for _ in 0..200 {
            if !store.chat_parents().await.unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let next = Parents::default();
        next.load(&store).await;
        assert_eq!(next.of(Platform::Discord, ChatId(13)), Some(ChatId(11)));
        assert_eq!(next.of(Platform::Discord, ChatId(14)), None);
        assert_eq!(next.of(Platform::Telegram, ChatId(13)), None);
    }
}
