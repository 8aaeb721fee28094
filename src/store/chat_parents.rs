//! Which channel a thread was opened in, where threads are chats of their
//! own (Discord), for the per-chat settings' fallback to the channel.

use super::{Store, StoreError};
use sqlx::Row;
use switchboard_platform::{ChatId, Platform};

impl Store {
    /// Records (or corrects) the channel `chat` was opened in.
    pub async fn put_chat_parent(
        &self,
        platform: Platform,
        chat: ChatId,
        parent: ChatId,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO chat_parents (platform, chat_id, parent_id) VALUES ($1, $2, $3)
             ON CONFLICT (platform, chat_id) DO UPDATE SET parent_id = excluded.parent_id",
        )
        .bind(platform.as_str())
        .bind(chat.0)
        .bind(parent.0)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Every recorded thread with its channel (rows of an unknown platform
    /// are skipped).
    pub async fn chat_parents(&self) -> Result<Vec<(Platform, ChatId, ChatId)>, StoreError> {
        let rows = sqlx::query("SELECT platform, chat_id, parent_id FROM chat_parents")
            .fetch_all(&self.pool)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let platform: String = row.try_get("platform")?;
            if let Some(platform) = Platform::parse(&platform) {
                out.push((
                    platform,
                    ChatId(row.try_get("chat_id")?),
                    ChatId(row.try_get("parent_id")?),
                ));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use switchboard_platform::{ChatId, Platform};

    #[tokio::test]
    async fn a_threads_channel_is_kept_and_corrected() {
        let (store, _dir) = crate::store::test_store().await;
        store
            .put_chat_parent(Platform::Discord, ChatId(13), ChatId(11))
            .await
            .unwrap();
        store
            .put_chat_parent(Platform::Discord, ChatId(14), ChatId(11))
            .await
            .unwrap();
        // A thread moved (or a wrong first guess): the newer parent wins.
        store
            .put_chat_parent(Platform::Discord, ChatId(14), ChatId(12))
            .await
            .unwrap();
        let mut rows = store.chat_parents().await.unwrap();
        rows.sort_by_key(|(_, chat, _)| chat.0);
        assert_eq!(
            rows,
            [
                (Platform::Discord, ChatId(13), ChatId(11)),
                (Platform::Discord, ChatId(14), ChatId(12)),
            ]
        );
    }
}
