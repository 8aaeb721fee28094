//! Voice replies per session: the `/voice on|off` choice and whether the
//! session's latest message was a voice note (to reply in kind).

use super::chat_settings::Setting;
use super::{now, SessionId, Store, StoreError};
use sqlx::Row;

impl Store {
    /// The session's `/voice` choice (`None`: never set, reply in kind) and
    /// whether its latest message was a voice note.
    pub async fn voice_reply(
        &self,
        session: &SessionId,
    ) -> Result<(Option<String>, bool), StoreError> {
        let row = sqlx::query("SELECT voice, voice_in FROM chat_settings WHERE session_id = $1")
            .bind(session)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => Ok((
                row.try_get::<Option<String>, _>("voice")?,
                row.try_get::<i64, _>("voice_in")? != 0,
            )),
            None => Ok((None, false)),
        }
    }

    /// Sets the session's `/voice` choice (`None`: back to replying in kind).
    pub async fn set_voice_reply(
        &self,
        session: &SessionId,
        voice: Option<&str>,
    ) -> Result<(), StoreError> {
        self.set_chat_setting(session, Setting::Voice, voice).await
    }

    /// Records whether the session's latest message was a voice note.
    pub async fn set_voice_in(
        &self,
        session: &SessionId,
        voice_in: bool,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO chat_settings (session_id, voice_in, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET voice_in = excluded.voice_in, updated_at = excluded.updated_at",
        )
        .bind(session)
        .bind(i64::from(voice_in))
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::SessionKey;
    use switchboard_platform::{ChatId, Platform, UserId};

    #[tokio::test]
    async fn the_voice_choice_and_the_last_voice_note_are_kept_per_session() {
        let (store, _dir) = crate::store::test_store().await;
        let key = |user| SessionKey {
            platform: Platform::Telegram,
            chat: ChatId(1),
            thread: None,
            user: UserId(user),
        };
        let a = store.sessions().open(&key(1)).await.unwrap();
        let b = store.sessions().open(&key(2)).await.unwrap();
        assert_eq!(store.voice_reply(&a).await.unwrap(), (None, false));
        store.set_verbosity(&a, Some("full")).await.unwrap();
        assert_eq!(store.voice_reply(&a).await.unwrap(), (None, false));
        store.set_voice_in(&a, true).await.unwrap();
        store.set_voice_reply(&a, Some("on")).await.unwrap();
        assert_eq!(
            store.voice_reply(&a).await.unwrap(),
            (Some("on".to_owned()), true)
        );
        assert_eq!(store.verbosity(&a).await.unwrap().as_deref(), Some("full"));
        store.set_voice_in(&a, false).await.unwrap();
        store.set_voice_reply(&a, None).await.unwrap();
        assert_eq!(store.voice_reply(&a).await.unwrap(), (None, false));
        assert_eq!(store.voice_reply(&b).await.unwrap(), (None, false));
    }
}
