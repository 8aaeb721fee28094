//! Inbound messages seen, for platforms that may deliver one twice: the
//! first sight wins (one conditional insert, across processes).

use super::{now, Inbox, StoreError};
use switchboard_platform::{ChatAddress, MessageId};

/// How long a sight is remembered (Telegram retries within minutes).
const KEPT_MS: i64 = 24 * 3600 * 1000;

impl Inbox<'_> {
    /// Records message `id` of `chat`: true the first time it is seen.
    pub async fn first_sight(self, chat: &ChatAddress, id: MessageId) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO inbound_seen (platform, chat, message_id, seen_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (platform, chat, message_id) DO NOTHING",
        )
        .bind(chat.platform.as_str())
        .bind(chat.chat.0)
        .bind(id.0)
        .bind(now())
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Forgets sights older than a day.
    pub async fn prune_sightings(self) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM inbound_seen WHERE seen_at < $1")
            .bind(now() - KEPT_MS)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use switchboard_platform::{ChatAddress, ChatId, MessageId, Platform};

    #[tokio::test]
    async fn a_message_is_seen_first_once() {
        let (store, _dir) = crate::store::test_store().await;
        let chat = ChatAddress::new(Platform::Telegram, ChatId(5), None);
        assert!(store
            .inbox()
            .first_sight(&chat, MessageId(1))
            .await
            .unwrap());
        assert!(!store
            .inbox()
            .first_sight(&chat, MessageId(1))
            .await
            .unwrap());
        let other = ChatAddress::new(Platform::Telegram, ChatId(6), None);
        assert!(store
            .inbox()
            .first_sight(&other, MessageId(1))
            .await
            .unwrap());
        assert_eq!(store.inbox().prune_sightings().await.unwrap(), 0);
    }
}
