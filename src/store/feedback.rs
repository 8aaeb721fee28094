//! Answer feedback (👍/👎) and the correction rules distilled from it, per user.

use super::memories::MemoryOwner;
use super::{dt, ms, Memories, SessionId, StoreError};
use crate::domain::FeedbackId;
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::Platform;

/// One rated (or rateable) answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedbackRecord {
    pub id: FeedbackId,
    pub session_id: SessionId,
    pub owner: MemoryOwner,
    pub question: String,
    pub answer: String,
    /// 1 helpful, -1 not helpful.
    pub rating: Option<i8>,
    /// When it was last rated.
    pub rated_at: Option<DateTime<Utc>>,
}

/// A rating just recorded, and the one it replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct Rated {
    pub record: FeedbackRecord,
    pub previous: Option<i8>,
}

impl Rated {
    /// Whether the user's 👎 set changed, so their correction rules must be
    /// distilled again (a 👎 added, or one taken back with 👍).
    pub fn changes_rules(&self) -> bool {
        self.record.rating != self.previous
            && (self.record.rating == Some(-1) || self.previous == Some(-1))
    }
}

impl Memories<'_> {
    /// Records an answer that can be rated; `id` travels in the buttons.
    pub async fn create_feedback(
        self,
        id: &FeedbackId,
        session: &SessionId,
        owner: MemoryOwner,
        question: &str,
        answer: &str,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO feedback (id, session_id, platform, user_id, question, answer, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(session)
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(question)
        .bind(answer)
        .bind(ms(at))
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Notes the message carrying the buttons of answer `id`, so a reaction
    /// on it can rate the answer too.
    pub async fn set_feedback_message(
        self,
        id: &FeedbackId,
        chat: i64,
        message: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE feedback SET chat_id = $1, message_id = $2 WHERE id = $3")
            .bind(chat)
            .bind(message)
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// The rateable answer carried by `message` in `chat` of `platform`.
    pub async fn feedback_at(
        self,
        platform: Platform,
        chat: i64,
        message: i64,
    ) -> Result<Option<FeedbackId>, StoreError> {
        let id: Option<FeedbackId> = sqlx::query_scalar(
            "SELECT id FROM feedback WHERE platform = $1 AND chat_id = $2 AND message_id = $3",
        )
        .bind(platform.as_str())
        .bind(chat)
        .bind(message)
        .fetch_optional(&self.db.pool)
        .await?;
        Ok(id)
    }

    /// Rates an answer of `owner`. `None` when there is no such answer of theirs.
    pub async fn rate_feedback(
        self,
        id: &FeedbackId,
        owner: MemoryOwner,
        rating: i8,
        at: DateTime<Utc>,
    ) -> Result<Option<Rated>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let previous: Option<Option<i64>> = sqlx::query_scalar(
            "SELECT rating FROM feedback WHERE id = $1 AND platform = $2 AND user_id = $3",
        )
        .bind(id)
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(previous) = previous else {
            return Ok(None);
        };
        let row = sqlx::query(
            "UPDATE feedback SET rating = $1, rated_at = $2 WHERE id = $3
             RETURNING id, session_id, question, answer, rating, rated_at",
        )
        .bind(i64::from(rating))
        .bind(ms(at))
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(Rated {
            record: FeedbackRecord {
                id: row.try_get("id")?,
                session_id: row.try_get("session_id")?,
                owner,
                question: row.try_get("question")?,
                answer: row.try_get("answer")?,
                rating: row
                    .try_get::<Option<i64>, _>("rating")?
                    .and_then(|v| i8::try_from(v).ok()),
                rated_at: row.try_get::<Option<i64>, _>("rated_at")?.map(dt),
            },
            previous: previous.and_then(|v| i8::try_from(v).ok()),
        }))
    }

    /// Whether an answer with this id exists at all (whoever it belongs to).
    pub async fn feedback_exists(self, id: &FeedbackId) -> Result<bool, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM feedback WHERE id = $1")
            .bind(id)
            .fetch_one(&self.db.pool)
            .await?;
        Ok(n > 0)
    }

    /// The owner's answers rated 👎 since `since`, newest first.
    pub async fn negative_feedback(
        self,
        owner: MemoryOwner,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<FeedbackRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, session_id, question, answer, rating, rated_at FROM feedback
             WHERE platform = $1 AND user_id = $2 AND rating = -1 AND rated_at >= $3 ORDER BY rated_at DESC LIMIT $4",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(since))
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(FeedbackRecord {
                    id: r.try_get("id")?,
                    session_id: r.try_get("session_id")?,
                    owner,
                    question: r.try_get("question")?,
                    answer: r.try_get("answer")?,
                    rating: Some(-1),
                    rated_at: r.try_get::<Option<i64>, _>("rated_at")?.map(dt),
                })
            })
            .collect()
    }

    /// The owner's rated answers (👍 and 👎), newest rating first.
    pub async fn rated_feedback(
        self,
        owner: MemoryOwner,
        limit: u32,
    ) -> Result<Vec<FeedbackRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, session_id, question, answer, rating, rated_at FROM feedback
             WHERE platform = $1 AND user_id = $2 AND rating IS NOT NULL ORDER BY rated_at DESC LIMIT $3",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(FeedbackRecord {
                    id: r.try_get("id")?,
                    session_id: r.try_get("session_id")?,
                    owner,
                    question: r.try_get("question")?,
                    answer: r.try_get("answer")?,
                    rating: r
                        .try_get::<Option<i64>, _>("rating")?
                        .map(|v| if v < 0 { -1 } else { 1 }),
                    rated_at: r.try_get::<Option<i64>, _>("rated_at")?.map(dt),
                })
            })
            .collect()
    }

    /// Replaces the owner's correction rules; they are injected until `expires_at`.
    pub async fn replace_correction_rules(
        self,
        owner: MemoryOwner,
        rules: &[String],
        at: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        sqlx::query("DELETE FROM correction_rules WHERE platform = $1 AND user_id = $2")
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .execute(&mut *tx)
            .await?;
        for rule in rules {
            sqlx::query(
                "INSERT INTO correction_rules (platform, user_id, rule, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .bind(rule)
            .bind(ms(at))
            .bind(ms(expires_at))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The owner's unexpired correction rules, oldest first.
    pub async fn correction_rules(
        self,
        owner: MemoryOwner,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let rules = sqlx::query_scalar(
            "SELECT rule FROM correction_rules WHERE platform = $1 AND user_id = $2 AND expires_at > $3 ORDER BY id LIMIT $4",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(ms(now))
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        Ok(rules)
    }

    /// Deletes expired correction rules and feedback older than `before`.
    pub async fn collect_feedback(
        self,
        now: DateTime<Utc>,
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let rules = sqlx::query("DELETE FROM correction_rules WHERE expires_at <= $1")
            .bind(ms(now))
            .execute(&self.db.pool)
            .await?;
        let rows = sqlx::query("DELETE FROM feedback WHERE created_at < $1")
            .bind(ms(before))
            .execute(&self.db.pool)
            .await?;
        Ok(rules.rows_affected() + rows.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{test_store, SessionKey};
    use chrono::Duration;
    use switchboard_platform::{ChatId, Platform, UserId};

    #[tokio::test]
    async fn ratings_belong_to_the_asker_and_rules_expire() {
        let (store, _dir) = test_store().await;
        let key = SessionKey {
            platform: Platform::Console,
            chat: ChatId(1),
            thread: None,
            user: UserId(1),
        };
        let s = store.sessions().open(&key).await.unwrap();
        let me = MemoryOwner::of(&key);
        let other = MemoryOwner::new(Platform::Console, UserId(2));
        let now = Utc::now();
        store
            .memories()
            .create_feedback(&"abc".parse().unwrap(), &s, me, "q", "a", now)
            .await
            .unwrap();
        assert!(store
            .memories()
            .rate_feedback(&"abc".parse().unwrap(), other, -1, now)
            .await
            .unwrap()
            .is_none());
        assert!(store
            .memories()
            .feedback_exists(&"abc".parse().unwrap())
            .await
            .unwrap());
        let rated = store
            .memories()
            .rate_feedback(&"abc".parse().unwrap(), me, -1, now)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rated.record.rating, Some(-1));
        assert_eq!(rated.previous, None);
        assert!(rated.changes_rules());
        let again = store
            .memories()
            .rate_feedback(&"abc".parse().unwrap(), me, -1, now)
            .await
            .unwrap()
            .unwrap();
        assert!(!again.changes_rules(), "the same 👎 twice changes nothing");
        assert_eq!(
            store
                .memories()
                .negative_feedback(me, now - Duration::days(7), 10)
                .await
                .unwrap()
                .len(),
            1
        );
        assert!(store
            .memories()
            .negative_feedback(other, now - Duration::days(7), 10)
            .await
            .unwrap()
            .is_empty());

        store
            .memories()
            .replace_correction_rules(me, &["Be brief.".into()], now, now + Duration::days(7))
            .await
            .unwrap();
        assert_eq!(
            store.memories().correction_rules(me, now, 5).await.unwrap(),
            ["Be brief."]
        );
        assert!(store
            .memories()
            .correction_rules(other, now, 5)
            .await
            .unwrap()
            .is_empty());
        assert!(store
            .memories()
            .correction_rules(me, now + Duration::days(8), 5)
            .await
            .unwrap()
            .is_empty());

        // Taking the 👎 back with 👍 changes the rules' input.
        let flipped = store
            .memories()
            .rate_feedback(&"abc".parse().unwrap(), me, 1, now)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(flipped.previous, Some(-1));
        assert!(flipped.changes_rules());
        assert!(store
            .memories()
            .negative_feedback(me, now - Duration::days(7), 10)
            .await
            .unwrap()
            .is_empty());
        let up_again = store
            .memories()
            .rate_feedback(&"abc".parse().unwrap(), me, 1, now)
            .await
            .unwrap()
            .unwrap();
        assert!(!up_again.changes_rules());
    }
}
