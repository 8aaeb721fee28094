//! The inbox: accepted messages waiting for their session, durable so that a
//! restart (or a dead process) loses none of them.

use super::{now, Store, StoreError};
use sqlx::Row;
use switchboard_platform::{InboundMessage, Platform};

/// How long a process's inbox rows stay its own without a renewal.
pub(crate) const INBOX_LEASE_MS: i64 = 60_000;

/// A queued message taken over from a process that is gone.
#[derive(Debug, Clone)]
pub struct InboxEntry {
    pub id: i64,
    pub message: InboundMessage,
    /// Set when its turn had started in the process that is gone: the tools
    /// with side effects it had run (empty: none).
    pub interrupted: Option<Vec<String>>,
}

impl Store {
    /// Stores an accepted message for `owner` (a process id); returns its row id.
    pub async fn inbox_add(
        &self,
        owner: &str,
        message: &InboundMessage,
    ) -> Result<i64, StoreError> {
        let json =
            serde_json::to_string(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO inbox (platform, message, owner, lease_until, received_at)
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(message.chat.platform.as_str())
        .bind(json)
        .bind(owner)
        .bind(now() + INBOX_LEASE_MS)
        .bind(now())
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    /// Stores a message `owner` accepted at `received_at` but kept only in its
    /// local spool (storage was down), released so that the next
    /// [`Store::inbox_take_abandoned`] of a process serving its platform takes it.
    pub async fn inbox_restore(
        &self,
        owner: &str,
        message: &InboundMessage,
        received_at: i64,
    ) -> Result<i64, StoreError> {
        let json =
            serde_json::to_string(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO inbox (platform, message, owner, lease_until, received_at)
             VALUES ($1, $2, $3, 0, $4) RETURNING id",
        )
        .bind(message.chat.platform.as_str())
        .bind(json)
        .bind(owner)
        .bind(received_at)
        .fetch_one(&self.pool)
        .await?;
        Ok(id)
    }

    /// Marks `owner`'s row `id` as started: its turn runs now. The row stays
    /// until the turn ends ([`Store::inbox_remove`]), so a process that dies
    /// mid-turn leaves it to the next. False when the row is no longer
    /// `owner`'s (another process took it over while this one could not
    /// renew its lease): that process answers it.
    pub async fn inbox_start(&self, owner: &str, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE inbox SET started_at = $1, ran = NULL WHERE id = $2 AND owner = $3",
        )
        .bind(now())
        .bind(id)
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records the tools with side effects the started turn of rows `ids`
    /// has run so far (`ran`, comma-separated).
    pub async fn inbox_ran(&self, ids: &[i64], ran: &str) -> Result<(), StoreError> {
        for id in ids {
            sqlx::query("UPDATE inbox SET ran = $1 WHERE id = $2")
                .bind(ran)
                .bind(id)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    /// Removes a message whose turn has ended.
    pub async fn inbox_remove(&self, id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM inbox WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Extends the lease on `owner`'s rows: the process is alive.
    pub async fn inbox_renew(&self, owner: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE inbox SET lease_until = $1 WHERE owner = $2")
            .bind(now() + INBOX_LEASE_MS)
            .bind(owner)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Gives up `owner`'s rows at a clean shutdown, so the next process takes
    /// them at once instead of after the lease.
    pub async fn inbox_release(&self, owner: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE inbox SET lease_until = 0 WHERE owner = $1")
            .bind(owner)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes over the rows of processes that are gone (lapsed lease) for the
    /// `platforms` this process serves, oldest first. The conditional update
    /// gives each row to one taker.
    pub async fn inbox_take_abandoned(
        &self,
        owner: &str,
        platforms: &[Platform],
    ) -> Result<Vec<InboxEntry>, StoreError> {
        if platforms.is_empty() {
            return Ok(Vec::new());
        }
        // Nearly always nothing is abandoned: one indexed read, no write lock.
        let any: Option<i64> =
            sqlx::query_scalar("SELECT id FROM inbox WHERE lease_until < $1 LIMIT 1")
                .bind(now())
                .fetch_optional(&self.pool)
                .await?;
        if any.is_none() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (0..platforms.len())
            .map(|i| format!("${}", i + 4))
            .collect();
        let sql = format!(
            "UPDATE inbox SET owner = $1, lease_until = $2
             WHERE lease_until < $3 AND platform IN ({})
             RETURNING id, message, received_at, started_at, ran",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql)
            .bind(owner)
            .bind(now() + INBOX_LEASE_MS)
            .bind(now());
        for p in platforms {
            query = query.bind(p.as_str());
        }
        let rows = query.fetch_all(&self.pool).await?;
        let mut entries = Vec::with_capacity(rows.len());
        for row in rows {
            let id: i64 = row.try_get("id")?;
            let received_at: i64 = row.try_get("received_at")?;
            let json: String = row.try_get("message")?;
            let started: Option<i64> = row.try_get("started_at")?;
            let ran: Option<String> = row.try_get("ran")?;
            let interrupted = started.map(|_| {
                ran.iter()
                    .flat_map(|r| r.split(", "))
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            });
            match serde_json::from_str(&json) {
                Ok(message) => entries.push((
                    received_at,
                    InboxEntry {
                        id,
                        message,
                        interrupted,
                    },
                )),
                Err(e) => {
                    tracing::warn!(id, error = %e, "dropping an unreadable inbox row");
                    self.inbox_remove(id).await?;
                }
            }
        }
        // In the order they arrived: a message restored from a spool has a
        // later id than ones stored after it.
        entries.sort_by_key(|(received_at, e)| (*received_at, e.id));
        Ok(entries.into_iter().map(|(_, e)| e).collect())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::{Addressed, ChatAddress, ChatId, ChatKind, MessageId, User, UserId};

    pub(crate) fn message(text: &str) -> InboundMessage {
        InboundMessage {
            chat: ChatAddress {
                platform: Platform::Console,
                chat: ChatId(1),
                thread: None,
            },
            chat_kind: ChatKind::Dm,
            message_id: MessageId(7),
            user: User {
                id: UserId(1),
                display_name: "Ann".into(),
                is_bot: false,
                is_approver: false,
            },
            text: text.into(),
            addressed: Addressed::Dm,
            reply_to: None,
            attachments: Vec::new(),
            timestamp: chrono::Utc::now(),
            parent: None,
        }
    }

    #[tokio::test]
    async fn a_row_taken_over_is_no_longer_its_first_owners_to_claim() {
        let (store, _dir) = test_store().await;
        let id = store.inbox_add("a", &message("one")).await.unwrap();
        store.inbox_release("a").await.unwrap(); // a's lease lapses
        let taken = store
            .inbox_take_abandoned("b", &[Platform::Console])
            .await
            .unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].interrupted, None, "its turn never started");
        assert!(!store.inbox_start("a", id).await.unwrap(), "b answers it");
        assert!(store.inbox_start("b", id).await.unwrap());
        store
            .inbox_ran(&[id], "remember, exec_command")
            .await
            .unwrap();
        // b dies mid-turn: c learns what had run.
        store.inbox_release("b").await.unwrap();
        let taken = store
            .inbox_take_abandoned("c", &[Platform::Console])
            .await
            .unwrap();
        assert_eq!(
            taken[0].interrupted.as_deref(),
            Some(&["remember".to_owned(), "exec_command".to_owned()][..])
        );
        store.inbox_remove(id).await.unwrap();
        assert!(!store.inbox_start("c", id).await.unwrap(), "gone");
    }

    #[tokio::test]
    async fn rows_of_a_live_process_stay_and_a_gone_ones_are_taken_once() {
        let (store, _dir) = test_store().await;
        let first = store.inbox_add("a", &message("one")).await.unwrap();
        store.inbox_add("a", &message("two")).await.unwrap();
        let platforms = [Platform::Console];
        assert!(
            store
                .inbox_take_abandoned("b", &platforms)
                .await
                .unwrap()
                .is_empty(),
            "a's lease is live"
        );
        store.inbox_release("a").await.unwrap();
        assert!(
            store
                .inbox_take_abandoned("b", &[Platform::Telegram])
                .await
                .unwrap()
                .is_empty(),
            "b does not serve that platform"
        );
        let taken = store.inbox_take_abandoned("b", &platforms).await.unwrap();
        let texts: Vec<&str> = taken.iter().map(|e| e.message.text.as_str()).collect();
        assert_eq!(texts, ["one", "two"], "oldest first");
        assert_eq!(taken[0].id, first);
        assert!(store
            .inbox_take_abandoned("c", &platforms)
            .await
            .unwrap()
            .is_empty());
        store.inbox_remove(first).await.unwrap();
        store.inbox_release("b").await.unwrap();
        let left = store.inbox_take_abandoned("c", &platforms).await.unwrap();
        assert_eq!(left.len(), 1);
    }
}
