//! Sessions (platform + chat + thread + user) and their persisted chat history.

use super::{now, Store, StoreError};
pub use crate::domain::{SessionId, SessionKey};
use crate::llm::Message;
use sqlx::Row;

impl Store {
    /// The session for `key`, created on first use.
    pub async fn session(&self, key: &SessionKey) -> Result<SessionId, StoreError> {
        let id = SessionId::new();
        let ts = now();
        let row = sqlx::query(
            "INSERT INTO sessions (id, platform, chat_id, thread_id, user_id, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6)
             ON CONFLICT (platform, chat_id, thread_id, user_id) DO UPDATE SET updated_at = excluded.updated_at
             RETURNING id",
        )
        .bind(&id)
        .bind(key.platform.as_str())
        .bind(key.chat.0)
        .bind(key.thread.map_or(0, |t| t.0))
        .bind(key.user.0)
        .bind(ts)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("id")?)
    }

    /// The last `limit` live messages of a session (not folded by compaction), oldest first.
    pub async fn history(
        &self,
        session: &SessionId,
        limit: u32,
    ) -> Result<Vec<Message>, StoreError> {
        let rows = sqlx::query(
            "SELECT payload FROM (SELECT id, payload FROM messages WHERE session_id = $1 AND archived = 0 ORDER BY id DESC LIMIT $2) AS recent
             ORDER BY id ASC",
        )
        .bind(session)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let payload: String = r.try_get("payload")?;
                serde_json::from_str(&payload)
                    .map_err(|e| StoreError::Corrupt(format!("message payload: {e}")))
            })
            .collect()
    }

    /// Appends messages to a session's history in one transaction.
    pub async fn append_messages(
        &self,
        session: &SessionId,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let ts = now();
        for m in messages {
            // Known secrets never reach a history row, whoever produced the text.
            let value = serde_json::to_value(m).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            let payload = crate::secrets::scrub_value(&value).to_string();
            sqlx::query(
                "INSERT INTO messages (session_id, payload, created_at) VALUES ($1, $2, $3)",
            )
            .bind(session)
            .bind(payload)
            .bind(ts)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Forgets a session's history (`/clear`).
    pub async fn clear_history(&self, session: &SessionId) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM messages WHERE session_id = $1")
            .bind(session)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::{ChatId, Platform, ThreadId, UserId};

    fn key(user: i64, thread: Option<i64>) -> SessionKey {
        SessionKey {
            platform: Platform::Telegram,
            chat: ChatId(-100),
            thread: thread.map(ThreadId),
            user: UserId(user),
        }
    }

    #[tokio::test]
    async fn sessions_are_per_user_and_thread() {
        let (store, _dir) = test_store().await;
        let a = store.session(&key(1, None)).await.unwrap();
        assert_eq!(a, store.session(&key(1, None)).await.unwrap());
        assert_ne!(a, store.session(&key(2, None)).await.unwrap());
        assert_ne!(a, store.session(&key(1, Some(7))).await.unwrap());
    }

    #[tokio::test]
    async fn history_round_trips_in_order_and_clears() {
        let (store, _dir) = test_store().await;
        let s = store.session(&key(1, None)).await.unwrap();
        let msgs: Vec<Message> = (0..5).map(|i| Message::user(format!("m{i}"))).collect();
        store.append_messages(&s, &msgs).await.unwrap();
        let last3 = store.history(&s, 3).await.unwrap();
        assert_eq!(
            last3.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
            ["m2", "m3", "m4"]
        );
        assert_eq!(store.clear_history(&s).await.unwrap(), 5);
        assert!(store.history(&s, 10).await.unwrap().is_empty());
    }
}
