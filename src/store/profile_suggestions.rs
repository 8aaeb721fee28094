//! Profile-update suggestions from reflection notes (`store.suggestions()`):
//! proposed once per user and text (folded), shown on a card in the user's
//! direct messages, decided once — applied (written as a memory) or
//! dismissed (kept, so the same text is not proposed again).

use super::{dt, ms, MemoryOwner, Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::any::AnyRow;
use sqlx::Row;
use switchboard_platform::{ChatId, Platform, UserId};

/// The suggestions: one row per user and proposed text.
#[derive(Debug, Clone, Copy)]
pub struct Suggestions<'a> {
    pub(super) db: &'a Store,
}

/// Where a suggestion stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuggestionStatus {
    Pending,
    Applied,
    Dismissed,
}

impl SuggestionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SuggestionStatus::Pending => "pending",
            SuggestionStatus::Applied => "applied",
            SuggestionStatus::Dismissed => "dismissed",
        }
    }

    fn parse(s: &str) -> Option<SuggestionStatus> {
        [
            SuggestionStatus::Pending,
            SuggestionStatus::Applied,
            SuggestionStatus::Dismissed,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// A stored suggestion.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSuggestion {
    pub id: String,
    pub owner: MemoryOwner,
    /// The proposed change, shown verbatim and written verbatim on Apply.
    pub content: String,
    pub status: SuggestionStatus,
    /// The chat its card was posted in, once it was.
    pub chat: Option<ChatId>,
    pub created_at: DateTime<Utc>,
    pub memory_id: Option<i64>,
}

/// The text folded for "the same suggestion": lower case, words only.
pub fn fingerprint(content: &str) -> String {
    content
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

const COLUMNS: &str = "id, platform, user_id, content, status, chat_id, created_at, memory_id";

fn read(row: &AnyRow) -> Result<ProfileSuggestion, StoreError> {
    let platform: String = row.try_get("platform")?;
    let status: String = row.try_get("status")?;
    Ok(ProfileSuggestion {
        id: row.try_get("id")?,
        owner: MemoryOwner::new(
            Platform::parse(&platform)
                .ok_or_else(|| StoreError::Corrupt(format!("platform {platform}")))?,
            UserId(row.try_get("user_id")?),
        ),
        content: row.try_get("content")?,
        status: SuggestionStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("suggestion status {status}")))?,
        chat: row.try_get::<Option<i64>, _>("chat_id")?.map(ChatId),
        created_at: dt(row.try_get("created_at")?),
        memory_id: row.try_get("memory_id")?,
    })
}

impl Suggestions<'_> {
    /// Proposes `content` for `owner` under `id`: `false` when the same text
    /// (by [`fingerprint`]) was proposed before, whatever became of it.
    pub async fn propose(
        self,
        id: &str,
        owner: MemoryOwner,
        content: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "INSERT INTO profile_suggestions (id, platform, user_id, content, fingerprint, status, created_at)
             VALUES ($1, $2, $3, $4, $5, 'pending', $6)
             ON CONFLICT (platform, user_id, fingerprint) DO NOTHING",
        )
        .bind(id)
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(content)
        .bind(fingerprint(content))
        .bind(ms(at))
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The owner's pending suggestions whose card is not out yet, oldest first.
    pub async fn unposted(
        self,
        owner: MemoryOwner,
        limit: u32,
    ) -> Result<Vec<ProfileSuggestion>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM profile_suggestions
             WHERE platform = $1 AND user_id = $2 AND status = 'pending' AND posted_at IS NULL
             ORDER BY created_at, id LIMIT $3"
        ))
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(read).collect()
    }

    /// Claims the posting of `id`'s card in `chat`: true for exactly one caller.
    pub async fn claim_post(
        self,
        id: &str,
        chat: ChatId,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE profile_suggestions SET posted_at = $1, chat_id = $2
             WHERE id = $3 AND posted_at IS NULL AND status = 'pending'",
        )
        .bind(ms(at))
        .bind(chat.0)
        .bind(id)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives the posting of `id` back (its card could not be sent).
    pub async fn release_post(self, id: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE profile_suggestions SET posted_at = NULL, chat_id = NULL WHERE id = $1",
        )
        .bind(id)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// The suggestion `id`, if there is one.
    pub async fn get(self, id: &str) -> Result<Option<ProfileSuggestion>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM profile_suggestions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.db.pool)
        .await?;
        row.as_ref().map(read).transpose()
    }

    /// Decides the pending `id` as `status`: true for exactly one caller.
    pub async fn decide(
        self,
        id: &str,
        status: SuggestionStatus,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE profile_suggestions SET status = $1, decided_at = $2
             WHERE id = $3 AND status = 'pending'",
        )
        .bind(status.as_str())
        .bind(ms(at))
        .bind(id)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records the memory Apply wrote — or, with `None`, puts the applied
    /// suggestion back to pending (the memory could not be written).
    pub async fn applied(self, id: &str, memory: Option<i64>) -> Result<(), StoreError> {
        let sql = match memory {
            Some(_) => "UPDATE profile_suggestions SET memory_id = $1 WHERE id = $2",
            None => "UPDATE profile_suggestions SET status = 'pending', decided_at = NULL, memory_id = $1 WHERE id = $2",
        };
        sqlx::query(sql)
            .bind(memory)
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;

    #[tokio::test]
    async fn a_suggestion_is_proposed_once_posted_once_and_decided_once() {
        let (store, _dir) = test_store().await;
        let owner = MemoryOwner::new(Platform::Telegram, UserId(7));
        let s = store.suggestions();
        let now = Utc::now();
        assert!(s
            .propose("a1", owner, "Prefers metric units.", now)
            .await
            .unwrap());
        assert!(
            !s.propose("a2", owner, " prefers METRIC units ", now)
                .await
                .unwrap(),
            "the same text again"
        );
        let other = MemoryOwner::new(Platform::Telegram, UserId(8));
        assert!(s
            .propose("b1", other, "Prefers metric units.", now)
            .await
            .unwrap());
        let open = s.unposted(owner, 5).await.unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].content, "Prefers metric units.");
        assert!(s.claim_post("a1", ChatId(7), now).await.unwrap());
        assert!(!s.claim_post("a1", ChatId(7), now).await.unwrap());
        assert!(s.unposted(owner, 5).await.unwrap().is_empty());
        assert!(s
            .decide("a1", SuggestionStatus::Dismissed, now)
            .await
            .unwrap());
        assert!(!s
            .decide("a1", SuggestionStatus::Applied, now)
            .await
            .unwrap());
        let got = s.get("a1").await.unwrap().unwrap();
        assert_eq!(got.status, SuggestionStatus::Dismissed);
        assert_eq!(got.chat, Some(ChatId(7)));
        assert_eq!(s.get("zz").await.unwrap(), None);
    }
}
