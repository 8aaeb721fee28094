//! A session's messages: appended, read back (live or archived ones too),
//! folded by compaction, and forgotten on `/clear`.

use super::{now, SessionId, Store, StoreError};
use crate::llm::Message;
use sqlx::any::AnyRow;
use sqlx::Row;

/// A session's messages: appended, read back, folded by compaction and searched (`store.history().recent()`).
#[derive(Debug, Clone, Copy)]
pub struct History<'a> {
    pub(super) db: &'a Store,
}

fn message(row: &AnyRow) -> Result<(i64, Message), StoreError> {
    let payload: String = row.try_get("payload")?;
    let m = serde_json::from_str(&payload)
        .map_err(|e| StoreError::Corrupt(format!("message payload: {e}")))?;
    Ok((row.try_get("id")?, m))
}

impl History<'_> {
    /// The last `limit` live messages of a session (not folded by compaction), oldest first.
    pub async fn recent(self, session: &SessionId, limit: u32) -> Result<Vec<Message>, StoreError> {
        let rows = sqlx::query(
            "SELECT payload FROM (SELECT id, payload FROM messages WHERE session_id = $1 AND archived = 0 ORDER BY id DESC LIMIT $2) AS recent
             ORDER BY id ASC",
        )
        .bind(session)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
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
    pub async fn append(self, session: &SessionId, messages: &[Message]) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
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
    pub async fn clear(self, session: &SessionId) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM messages WHERE session_id = $1")
            .bind(session)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected())
    }

    /// The last `limit` live (not archived) messages with their ids, oldest first.
    pub async fn live(
        self,
        session: &SessionId,
        limit: u32,
    ) -> Result<Vec<(i64, Message)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, payload FROM (SELECT id, payload FROM messages WHERE session_id = $1 AND archived = 0
             ORDER BY id DESC LIMIT $2) AS recent ORDER BY id ASC",
        )
        .bind(session)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(message).collect()
    }

    /// Messages with ids in `from..=to` (archived ones included), oldest first.
    pub async fn between(
        self,
        session: &SessionId,
        from: i64,
        to: i64,
        limit: u32,
    ) -> Result<Vec<(i64, Message)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, payload FROM messages WHERE session_id = $1 AND id >= $2 AND id <= $3 ORDER BY id ASC LIMIT $4",
        )
        .bind(session)
        .bind(from)
        .bind(to)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(message).collect()
    }

    /// The last `limit` messages up to `through` (archived ones included), oldest first.
    pub async fn through(
        self,
        session: &SessionId,
        through: i64,
        limit: u32,
    ) -> Result<Vec<(i64, Message)>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, payload FROM (SELECT id, payload FROM messages WHERE session_id = $1 AND id <= $2
             ORDER BY id DESC LIMIT $3) AS recent ORDER BY id ASC",
        )
        .bind(session)
        .bind(through)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(message).collect()
    }

    /// Records a compaction: archives history messages up to `through` and the
    /// first `folded_new` of the session's `new_count` latest messages, and
    /// stores the summary that now stands for them.
    pub async fn fold(
        self,
        session: &SessionId,
        through: Option<i64>,
        new_count: usize,
        folded_new: usize,
        summary: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().await?;
        let mut last = through;
        if folded_new > 0 {
            let ids: Vec<i64> = sqlx::query_scalar(
                "SELECT id FROM messages WHERE session_id = $1 ORDER BY id DESC LIMIT $2",
            )
            .bind(session)
            .bind(i64::try_from(new_count).unwrap_or(i64::MAX))
            .fetch_all(&mut *tx)
            .await?;
            // `ids` is newest first: the folded ones are the oldest of them.
            if let Some(id) = ids
                .len()
                .checked_sub(folded_new.min(ids.len()))
                .and_then(|i| ids.get(i))
            {
                last = Some(last.map_or(*id, |l| l.max(*id)));
            }
        }
        if let Some(last) = last {
            sqlx::query("UPDATE messages SET archived = 1 WHERE session_id = $1 AND id <= $2")
                .bind(session)
                .bind(last)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "INSERT INTO session_state (session_id, summary, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at",
        )
        .bind(session)
        .bind(summary)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::SessionKey;
    use crate::llm::Message;
    use crate::store::test_store;
    use switchboard_platform::{ChatId, Platform, UserId};

    fn key(user: i64) -> SessionKey {
        SessionKey {
            platform: Platform::Telegram,
            chat: ChatId(-100),
            thread: None,
            user: UserId(user),
        }
    }

    #[tokio::test]
    async fn history_round_trips_in_order_and_clears() {
        let (store, _dir) = test_store().await;
        let s = store.sessions().open(&key(1)).await.unwrap();
        let msgs: Vec<Message> = (0..5).map(|i| Message::user(format!("m{i}"))).collect();
        store.history().append(&s, &msgs).await.unwrap();
        let last3 = store.history().recent(&s, 3).await.unwrap();
        assert_eq!(
            last3.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(),
            ["m2", "m3", "m4"]
        );
        assert_eq!(store.history().clear(&s).await.unwrap(), 5);
        assert!(store.history().recent(&s, 10).await.unwrap().is_empty());
    }
}
