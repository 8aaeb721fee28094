//! The whole reasoning behind answers whose shown summary was clipped: kept
//! for their asker to read (the 💭 button), 30 days.

use super::{ms, Store, StoreError};
use chrono::{DateTime, Duration, Utc};
use sqlx::Row;
use switchboard_platform::{ChatId, Platform, UserId};

/// How long a note stays readable.
pub const REASONING_KEPT_DAYS: i64 = 30;

/// The reasoning notes: one per clipped answer.
#[derive(Debug, Clone, Copy)]
pub struct ReasoningNotes<'a> {
    pub(super) db: &'a Store,
}

/// A note as stored: whose it is, where it was given, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningNote {
    pub platform: Platform,
    pub chat: ChatId,
    pub user: UserId,
    pub content: String,
}

impl ReasoningNotes<'_> {
    /// Keeps `note` under `id` (short, it travels in a button), and forgets
    /// the notes older than [`REASONING_KEPT_DAYS`].
    pub async fn save(
        self,
        id: &str,
        note: &ReasoningNote,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let cutoff = at - Duration::days(REASONING_KEPT_DAYS);
        sqlx::query("DELETE FROM reasoning_notes WHERE created_at < $1")
            .bind(ms(cutoff))
            .execute(&self.db.pool)
            .await?;
        sqlx::query(
            "INSERT INTO reasoning_notes (id, platform, chat_id, user_id, content, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id)
        .bind(note.platform.as_str())
        .bind(note.chat.0)
        .bind(note.user.0)
        .bind(&note.content)
        .bind(ms(at))
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// The note `id`, when it is still kept.
    pub async fn get(self, id: &str) -> Result<Option<ReasoningNote>, StoreError> {
        let row = sqlx::query(
            "SELECT platform, chat_id, user_id, content FROM reasoning_notes WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.db.pool)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let platform: String = row.try_get("platform")?;
        Ok(Some(ReasoningNote {
            platform: Platform::parse(&platform)
                .ok_or_else(|| StoreError::Corrupt(format!("platform {platform}")))?,
            chat: ChatId(row.try_get("chat_id")?),
            user: UserId(row.try_get("user_id")?),
            content: row.try_get("content")?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;

    #[tokio::test]
    async fn a_note_is_kept_thirty_days() {
        let (store, _dir) = test_store().await;
        let note = ReasoningNote {
            platform: Platform::Telegram,
            chat: ChatId(-5),
            user: UserId(7),
            content: "long thoughts".into(),
        };
        let then = Utc::now() - Duration::days(REASONING_KEPT_DAYS + 1);
        store.reasoning().save("old", &note, then).await.unwrap();
        store
            .reasoning()
            .save("new", &note, Utc::now())
            .await
            .unwrap();
        assert_eq!(store.reasoning().get("new").await.unwrap(), Some(note));
        assert_eq!(store.reasoning().get("old").await.unwrap(), None);
        assert_eq!(store.reasoning().get("none").await.unwrap(), None);
    }
}
