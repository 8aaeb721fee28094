//! Sessions (platform + chat + thread + user) and their persisted chat history.

use super::{now, Store, StoreError};

/// Sessions: their keys, state documents, idleness and extraction claims (`store.sessions()`).
#[derive(Debug, Clone, Copy)]
pub struct Sessions<'a> {
    pub(super) db: &'a Store,
}
pub use crate::domain::{SessionId, SessionKey};
use sqlx::Row;

impl Sessions<'_> {
    /// The session for `key`, created on first use.
    pub async fn open(self, key: &SessionKey) -> Result<SessionId, StoreError> {
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
        .fetch_one(&self.db.pool)
        .await?;
        Ok(row.try_get("id")?)
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
        let a = store.sessions().open(&key(1, None)).await.unwrap();
        assert_eq!(a, store.sessions().open(&key(1, None)).await.unwrap());
        assert_ne!(a, store.sessions().open(&key(2, None)).await.unwrap());
        assert_ne!(a, store.sessions().open(&key(1, Some(7))).await.unwrap());
    }
}
