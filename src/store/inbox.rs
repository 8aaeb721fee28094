//! The inbox: accepted messages waiting for their session, durable so that a
//! restart (or a dead process) loses none of them. A burst of messages is
//! kept in one transaction, each with its sighting when its platform may
//! deliver it again (a repeat is dropped there, atomically with the keep).
//! A row belongs to the process that kept it until that process is gone
//! (see `liveness.rs`); then a process serving its platform takes it over.

use super::{now, Store, StoreError};
use crate::domain::ProcessId;
use sqlx::Row;
use switchboard_platform::{InboundMessage, Platform};

/// The inbox: accepted messages kept until their turn ran, and the sightings that drop repeats (`store.inbox()`).
#[derive(Debug, Clone, Copy)]
pub struct Inbox<'a> {
    pub(super) db: &'a Store,
}

/// What old versions read as the lease of a row: never lapsing, so that a
/// process of an earlier version running beside this one leaves it alone.
const NO_LEASE: i64 = i64::MAX / 4;

/// A queued message taken over from a process that is gone.
#[derive(Debug, Clone)]
pub struct InboxEntry {
    pub id: i64,
    pub message: InboundMessage,
    /// Set when its turn had started in the process that is gone: the tools
    /// with side effects it had run (empty: none).
    pub interrupted: Option<Vec<String>>,
    /// How many times a turn answering it started (and, the row being
    /// here, did not end).
    pub attempts: i64,
    /// Its answer had begun to reach the chat.
    pub answered: bool,
}

/// A message to keep.
#[derive(Debug, Clone, Copy)]
pub struct Intake<'a> {
    pub message: &'a InboundMessage,
    /// Its platform may deliver it again (a webhook retry, an update not
    /// yet confirmed at a crash): a copy already seen is a repeat.
    pub dedupe: bool,
}

/// What became of a message given to [`Inbox::keep`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Kept as this inbox row.
    Row(i64),
    /// Seen before: kept (and maybe answered) already.
    Repeat,
}

impl Inbox<'_> {
    /// Keeps a burst of accepted messages for `owner` (a process id), in
    /// one transaction: one commit however many they are.
    pub async fn keep(
        self,
        owner: &ProcessId,
        burst: &[Intake<'_>],
    ) -> Result<Vec<Keep>, StoreError> {
        if burst.is_empty() {
            return Ok(Vec::new());
        }
        let mut tx = self.db.begin_write().await?;
        let mut kept = Vec::with_capacity(burst.len());
        for intake in burst {
            if intake.dedupe && !first_sight(&mut tx, intake.message).await? {
                kept.push(Keep::Repeat);
                continue;
            }
            let id = insert(&mut tx, owner, intake.message, now()).await?;
            kept.push(Keep::Row(id));
        }
        tx.commit().await?;
        Ok(kept)
    }

    /// Stores a message `owner` accepted at `received_at` but kept only in its
    /// local spool (storage was down); `owner` is gone, so the next
    /// take-over by a process serving its platform takes it. `None`: a
    /// repeat of one kept already (`dedupe`, as in [`Intake`]).
    pub async fn restore(
        self,
        owner: &ProcessId,
        message: &InboundMessage,
        received_at: i64,
        dedupe: bool,
    ) -> Result<Option<i64>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        if dedupe && !first_sight(&mut tx, message).await? {
            tx.commit().await?;
            return Ok(None);
        }
        let id = insert(&mut tx, owner, message, received_at).await?;
        tx.commit().await?;
        Ok(Some(id))
    }

    /// Marks `owner`'s row `id` as started: its turn runs now (one more
    /// attempt). The row stays until the turn's answer is out
    /// ([`Inbox::remove`]), so a process that dies mid-turn leaves it
    /// to the next. False when the row is no longer `owner`'s (another
    /// process took it over): that process answers it.
    pub async fn start(self, owner: &ProcessId, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE inbox SET started_at = $1, ran = NULL, attempts = attempts + 1
             WHERE id = $2 AND owner = $3",
        )
        .bind(now())
        .bind(id)
        .bind(owner)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The turn of rows `ids` was cut short by a clean stop: that start does
    /// not count against the message (see [`InboxEntry::attempts`]), and
    /// what it had shown is no reason not to answer it afresh (nothing more
    /// was sent after the stop); the tools it ran still are.
    pub async fn unstart(self, ids: &[i64]) -> Result<(), StoreError> {
        for id in ids {
            sqlx::query(
                "UPDATE inbox SET answered_at = NULL,
                     attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END
                 WHERE id = $1",
            )
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        }
        Ok(())
    }

    /// Records the tools with side effects the started turn of rows `ids`
    /// has run so far (`ran`, comma-separated).
    pub async fn ran(self, ids: &[i64], ran: &str) -> Result<(), StoreError> {
        for id in ids {
            sqlx::query("UPDATE inbox SET ran = $1 WHERE id = $2")
                .bind(ran)
                .bind(id)
                .execute(&self.db.pool)
                .await?;
        }
        Ok(())
    }

    /// The answer of rows `ids` begins to reach the chat.
    pub async fn answering(self, ids: &[i64]) -> Result<(), StoreError> {
        for id in ids {
            sqlx::query("UPDATE inbox SET answered_at = $1 WHERE id = $2 AND answered_at IS NULL")
                .bind(now())
                .bind(id)
                .execute(&self.db.pool)
                .await?;
        }
        Ok(())
    }

    /// Removes a message whose turn has ended.
    pub async fn remove(self, id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM inbox WHERE id = $1")
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// The processes other than `me` that own queued messages, paused-turn
    /// marks or running tasks: the ones whose liveness matters.
    /// A row whose owner is no process id (never written so) names no
    /// process: it is left alone.
    pub async fn foreign_owners(self, me: &ProcessId) -> Result<Vec<ProcessId>, StoreError> {
        let owners: Vec<String> = sqlx::query_scalar(
            "SELECT owner FROM inbox WHERE owner <> $1
             UNION SELECT owner FROM resumes_in_flight WHERE owner <> $1
             UNION SELECT owner FROM tasks WHERE finished_at IS NULL AND owner <> $1",
        )
        .bind(me)
        .fetch_all(&self.db.pool)
        .await?;
        Ok(owners
            .into_iter()
            .filter_map(|owner| match owner.parse() {
                Ok(id) => Some(id),
                Err(e) => {
                    tracing::warn!(owner, error = %e, "rows owned by no process id left alone");
                    None
                }
            })
            .collect())
    }

    /// Takes over the rows of `gone` (a process that is gone) for the
    /// `platforms` this process (`owner`) serves, oldest first. The
    /// conditional update gives each row to one taker.
    pub async fn take_over(
        self,
        gone: &ProcessId,
        owner: &ProcessId,
        platforms: &[Platform],
    ) -> Result<Vec<InboxEntry>, StoreError> {
        if platforms.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (0..platforms.len())
            .map(|i| format!("${}", i + 3))
            .collect();
        let sql = format!(
            "UPDATE inbox SET owner = $1
             WHERE owner = $2 AND platform IN ({})
             RETURNING id, message, received_at, started_at, ran, attempts, answered_at",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(owner).bind(gone);
        for p in platforms {
            query = query.bind(p.as_str());
        }
        let rows = query.fetch_all(&self.db.pool).await?;
        let mut entries = Vec::with_capacity(rows.len());
        for row in rows {
            let id: i64 = row.try_get("id")?;
            let received_at: i64 = row.try_get("received_at")?;
            match entry(&row) {
                Ok(e) => entries.push((received_at, e)),
                Err(e) => {
                    tracing::warn!(id, error = %e, "dropping an unreadable inbox row");
                    self.remove(id).await?;
                }
            }
        }
        // In the order they arrived: a message restored from a spool has a
        // later id than ones stored after it.
        entries.sort_by_key(|(received_at, e)| (*received_at, e.id));
        Ok(entries.into_iter().map(|(_, e)| e).collect())
    }
}

/// An inbox row as taken over.
fn entry(row: &sqlx::any::AnyRow) -> Result<InboxEntry, StoreError> {
    let json: String = row.try_get("message")?;
    let started: Option<i64> = row.try_get("started_at")?;
    let ran: Option<String> = row.try_get("ran")?;
    let answered: Option<i64> = row.try_get("answered_at")?;
    let interrupted = started.map(|_| {
        ran.iter()
            .flat_map(|r| r.split(", "))
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    });
    Ok(InboxEntry {
        id: row.try_get("id")?,
        message: serde_json::from_str(&json).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        interrupted,
        attempts: row.try_get("attempts")?,
        answered: answered.is_some(),
    })
}

/// Records the sighting of `message` in `tx`: true the first time.
async fn first_sight(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    message: &InboundMessage,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "INSERT INTO inbound_seen (platform, chat, message_id, seen_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (platform, chat, message_id) DO NOTHING",
    )
    .bind(message.chat.platform.as_str())
    .bind(message.chat.chat.0)
    .bind(message.message_id.0)
    .bind(now())
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Inserts `message` as `owner`'s row in `tx`; returns its id.
async fn insert(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    owner: &ProcessId,
    message: &InboundMessage,
    received_at: i64,
) -> Result<i64, StoreError> {
    let json = serde_json::to_string(message).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let id = sqlx::query_scalar(
        "INSERT INTO inbox (platform, message, owner, lease_until, received_at)
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(message.chat.platform.as_str())
    .bind(json)
    .bind(owner)
    .bind(NO_LEASE)
    .bind(received_at)
    .fetch_one(&mut **tx)
    .await?;
    Ok(id)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::domain::ProcessId;
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

    fn keep(message: &InboundMessage, dedupe: bool) -> Intake<'_> {
        Intake { message, dedupe }
    }

    #[tokio::test]
    async fn a_burst_is_kept_at_once_and_a_repeat_is_dropped() {
        let (store, _dir) = test_store().await;
        let (one, two) = (message("one"), message("two"));
        let mut two = two;
        two.message_id = switchboard_platform::MessageId(8);
        let kept = store
            .inbox()
            .keep(
                &ProcessId::named("a"),
                &[keep(&one, true), keep(&two, true), keep(&one, true)],
            )
            .await
            .unwrap();
        assert!(matches!(
            kept[..],
            [Keep::Row(_), Keep::Row(_), Keep::Repeat]
        ));
        // The console never delivers twice: no sighting is asked for.
        let again = store
            .inbox()
            .keep(&ProcessId::named("a"), &[keep(&one, false)])
            .await
            .unwrap();
        assert!(matches!(again[..], [Keep::Row(_)]));
        assert_eq!(
            store
                .inbox()
                .restore(&ProcessId::named("gone"), &one, 1, true)
                .await
                .unwrap(),
            None,
            "a spooled copy of a kept message"
        );
    }

    #[tokio::test]
    async fn a_row_taken_over_is_no_longer_its_first_owners_to_claim() {
        let (store, _dir) = test_store().await;
        let id = match store
            .inbox()
            .keep(&ProcessId::named("a"), &[keep(&message("one"), false)])
            .await
            .unwrap()[..]
        {
            [Keep::Row(id)] => id,
            _ => unreachable!(),
        };
        let taken = store
            .inbox()
            .take_over(
                &ProcessId::named("a"),
                &ProcessId::named("b"),
                &[Platform::Console],
            )
            .await
            .unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].interrupted, None, "its turn never started");
        assert_eq!((taken[0].attempts, taken[0].answered), (0, false));
        assert!(
            !store
                .inbox()
                .start(&ProcessId::named("a"), id)
                .await
                .unwrap(),
            "b answers it"
        );
        assert!(store
            .inbox()
            .start(&ProcessId::named("b"), id)
            .await
            .unwrap());
        store
            .inbox()
            .ran(&[id], "remember, exec_command")
            .await
            .unwrap();
        store.inbox().answering(&[id]).await.unwrap();
        // b dies mid-turn: c learns what had run.
        let taken = store
            .inbox()
            .take_over(
                &ProcessId::named("b"),
                &ProcessId::named("c"),
                &[Platform::Console],
            )
            .await
            .unwrap();
        assert_eq!(
            taken[0].interrupted.as_deref(),
            Some(&["remember".to_owned(), "exec_command".to_owned()][..])
        );
        assert_eq!((taken[0].attempts, taken[0].answered), (1, true));
        assert_eq!(
            store
                .inbox()
                .foreign_owners(&ProcessId::named("a"))
                .await
                .unwrap(),
            [ProcessId::named("c")]
        );
        store.inbox().remove(id).await.unwrap();
        assert!(
            !store
                .inbox()
                .start(&ProcessId::named("c"), id)
                .await
                .unwrap(),
            "gone"
        );
        assert!(store
            .inbox()
            .foreign_owners(&ProcessId::named("a"))
            .await
            .unwrap()
            .is_empty());
    }

    #[tokio::test]
    async fn rows_of_other_platforms_stay_for_a_process_serving_them() {
        let (store, _dir) = test_store().await;
        store
            .inbox()
            .keep(&ProcessId::named("a"), &[keep(&message("one"), false)])
            .await
            .unwrap();
        assert!(store
            .inbox()
            .take_over(
                &ProcessId::named("a"),
                &ProcessId::named("b"),
                &[Platform::Telegram]
            )
            .await
            .unwrap()
            .is_empty());
        let taken = store
            .inbox()
            .take_over(
                &ProcessId::named("a"),
                &ProcessId::named("b"),
                &[Platform::Console],
            )
            .await
            .unwrap();
        assert_eq!(taken.len(), 1);
        assert!(
            store
                .inbox()
                .take_over(
                    &ProcessId::named("a"),
                    &ProcessId::named("c"),
                    &[Platform::Console]
                )
                .await
                .unwrap()
                .is_empty(),
            "taken once"
        );
    }
}
