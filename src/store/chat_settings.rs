//! Settings a session's users change from the chat (`/verbose`, `/queue`,
//! `/voice`), stored as text; the gateway parses them and falls back to the
//! operator's defaults.

use super::{now, SessionId, Store, StoreError};
use sqlx::Row;

/// A text column of `chat_settings` a command sets.
#[derive(Debug, Clone, Copy)]
pub(super) enum Setting {
    Verbosity,
    QueueMode,
    Voice,
}

impl Setting {
    fn column(self) -> &'static str {
        match self {
            Setting::Verbosity => "verbosity",
            Setting::QueueMode => "queue_mode",
            Setting::Voice => "voice",
        }
    }
}

impl Store {
    /// The session's `setting`; `None` when never set.
    pub(super) async fn chat_setting(
        &self,
        session: &SessionId,
        setting: Setting,
    ) -> Result<Option<String>, StoreError> {
        let column = setting.column();
        let row = sqlx::query(&format!(
            "SELECT {column} FROM chat_settings WHERE session_id = $1"
        ))
        .bind(session)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(row) => Ok(row.try_get::<Option<String>, _>(column)?),
            None => Ok(None),
        }
    }

    /// Sets the session's `setting` (`None`: back to the default).
    pub(super) async fn set_chat_setting(
        &self,
        session: &SessionId,
        setting: Setting,
        value: Option<&str>,
    ) -> Result<(), StoreError> {
        let column = setting.column();
        sqlx::query(&format!(
            "INSERT INTO chat_settings (session_id, {column}, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET {column} = excluded.{column}, updated_at = excluded.updated_at"
        ))
        .bind(session)
        .bind(value)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The session's verbosity as set with `/verbose`; `None` when never set.
    pub async fn verbosity(&self, session: &SessionId) -> Result<Option<String>, StoreError> {
        self.chat_setting(session, Setting::Verbosity).await
    }

    /// Sets the session's verbosity (`None`: back to the default).
    pub async fn set_verbosity(
        &self,
        session: &SessionId,
        verbosity: Option<&str>,
    ) -> Result<(), StoreError> {
        self.set_chat_setting(session, Setting::Verbosity, verbosity)
            .await
    }

    /// The session's queue mode as set with `/queue`; `None` when never set.
    pub async fn queue_mode(&self, session: &SessionId) -> Result<Option<String>, StoreError> {
        self.chat_setting(session, Setting::QueueMode).await
    }

    /// Sets the session's queue mode (`None`: back to the default).
    pub async fn set_queue_mode(
        &self,
        session: &SessionId,
        mode: Option<&str>,
    ) -> Result<(), StoreError> {
        self.set_chat_setting(session, Setting::QueueMode, mode)
            .await
    }
}

#[cfg(test)]
mod tests {
    use crate::store::SessionKey;
    use switchboard_platform::{ChatId, Platform, UserId};

    #[tokio::test]
    async fn verbosity_is_kept_per_session() {
        let (store, _dir) = crate::store::test_store().await;
        let key = |user| SessionKey {
            platform: Platform::Telegram,
            chat: ChatId(1),
            thread: None,
            user: UserId(user),
        };
        let a = store.sessions().open(&key(1)).await.unwrap();
        let b = store.sessions().open(&key(2)).await.unwrap();
        assert_eq!(store.verbosity(&a).await.unwrap(), None);
        store.set_verbosity(&a, Some("full")).await.unwrap();
        store.set_verbosity(&a, Some("off")).await.unwrap();
        assert_eq!(store.verbosity(&a).await.unwrap().as_deref(), Some("off"));
        assert_eq!(store.verbosity(&b).await.unwrap(), None);
        store.set_queue_mode(&a, Some("collect")).await.unwrap();
        assert_eq!(store.verbosity(&a).await.unwrap().as_deref(), Some("off"));
        assert_eq!(
            store.queue_mode(&a).await.unwrap().as_deref(),
            Some("collect")
        );
        store.set_verbosity(&a, None).await.unwrap();
        assert_eq!(store.verbosity(&a).await.unwrap(), None);
        assert_eq!(store.queue_mode(&b).await.unwrap(), None);
    }
}
