//! The outbox: what `switchboard mcp` (a process without platform adapters)
//! asks the running gateway to post, and what came back — the message sent,
//! or a question's answer. Every transition is one conditional update, so of
//! several gateway processes exactly one sends a row, and a question is
//! answered once.

use super::{dt, now, Store, StoreError};
use crate::domain::{ApprovalId, OutboxId};
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::{ChatAddress, MessageId, Platform, User, UserId};

/// The outbox: what `switchboard mcp` asks the gateway to post, and what came of it.
#[derive(Debug, Clone, Copy)]
pub struct Outbox<'a> {
    pub(super) db: &'a Store,
}

/// A claim older than this is taken to be from a process that died while
/// sending, and the row is sent again.
const CLAIM_LEASE_MS: i64 = 60_000;

/// What an outbox row asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxKind {
    /// Post the text.
    Notify,
    /// Show the card of an approval.
    Approval,
    /// Post the question; the reply to it is the answer.
    Ask,
}

impl OutboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::Notify => "notify",
            OutboxKind::Approval => "approval",
            OutboxKind::Ask => "ask",
        }
    }

    fn parse(s: &str) -> Option<OutboxKind> {
        match s {
            "notify" => Some(OutboxKind::Notify),
            "approval" => Some(OutboxKind::Approval),
            "ask" => Some(OutboxKind::Ask),
            _ => None,
        }
    }
}

/// What an outbox row asks the gateway to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboxRequest {
    /// Post this text.
    Notify(String),
    /// Show the card of this approval.
    Approval(ApprovalId),
    /// Post this question; the reply to it is the answer.
    Ask(String),
}

impl OutboxRequest {
    pub fn kind(&self) -> OutboxKind {
        match self {
            OutboxRequest::Notify(_) => OutboxKind::Notify,
            OutboxRequest::Approval(_) => OutboxKind::Approval,
            OutboxRequest::Ask(_) => OutboxKind::Ask,
        }
    }

    /// The `body` column: the text, or the approval's id.
    fn body(&self) -> &str {
        match self {
            OutboxRequest::Notify(text) | OutboxRequest::Ask(text) => text,
            OutboxRequest::Approval(id) => id.as_str(),
        }
    }

    fn from_columns(kind: &str, body: String) -> Result<OutboxRequest, StoreError> {
        Ok(match OutboxKind::parse(kind) {
            Some(OutboxKind::Notify) => OutboxRequest::Notify(body),
            Some(OutboxKind::Ask) => OutboxRequest::Ask(body),
            Some(OutboxKind::Approval) => OutboxRequest::Approval(
                ApprovalId::try_from(body).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            ),
            None => return Err(StoreError::Corrupt(format!("outbox kind {kind:?}"))),
        })
    }
}

/// Where an outbox row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxStatus {
    Queued,
    /// Claimed by a gateway process that is sending it.
    Sending,
    Sent,
    /// The platform refused it (the error says why).
    Failed,
    /// A question somebody answered.
    Answered,
    /// A question nobody answered in time.
    Expired,
}

impl OutboxStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxStatus::Queued => "queued",
            OutboxStatus::Sending => "sending",
            OutboxStatus::Sent => "sent",
            OutboxStatus::Failed => "failed",
            OutboxStatus::Answered => "answered",
            OutboxStatus::Expired => "expired",
        }
    }

    fn parse(s: &str) -> Option<OutboxStatus> {
        [
            OutboxStatus::Queued,
            OutboxStatus::Sending,
            OutboxStatus::Sent,
            OutboxStatus::Failed,
            OutboxStatus::Answered,
            OutboxStatus::Expired,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// One outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub id: OutboxId,
    pub chat: ChatAddress,
    pub request: OutboxRequest,
    pub status: OutboxStatus,
    pub message: Option<MessageId>,
    pub error: Option<String>,
    pub answer: Option<String>,
    pub answered_by: Option<UserId>,
    pub answered_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A question answered by a reply in its chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsweredQuestion {
    pub id: OutboxId,
}

const COLUMNS: &str = "id, kind, chat, body, status, message_id, error, answer, answered_by, answered_name, created_at, expires_at";

impl Outbox<'_> {
    /// Queues a row; an existing row with the same id is left as it is (a
    /// client asking again after a restart gets the first request's fate).
    /// Returns the stored row and whether this call inserted it.
    pub async fn queue(
        self,
        id: &OutboxId,
        chat: &ChatAddress,
        request: &OutboxRequest,
        expires_at: DateTime<Utc>,
    ) -> Result<(OutboxEntry, bool), StoreError> {
        let chat_json =
            serde_json::to_string(chat).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let inserted = sqlx::query(
            "INSERT INTO outbox (id, kind, platform, chat, body, status, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(request.kind().as_str())
        .bind(chat.platform.as_str())
        .bind(chat_json)
        .bind(request.body())
        .bind(now())
        .bind(expires_at.timestamp_millis())
        .execute(&self.db.pool)
        .await?
        .rows_affected()
            == 1;
        let entry = self
            .get(id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("outbox row {id} vanished")))?;
        Ok((entry, inserted))
    }

    pub async fn get(self, id: &OutboxId) -> Result<Option<OutboxEntry>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM outbox WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?;
        row.as_ref().map(entry_from_row).transpose()
    }

    /// Claims up to `limit` rows for `platform` that are queued or whose
    /// sender died (a question only before its deadline): each returned row
    /// is this caller's alone to send.
    pub async fn claim(
        self,
        platform: Platform,
        limit: u32,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let now = now();
        let stale = now - CLAIM_LEASE_MS;
        let ids: Vec<OutboxId> = sqlx::query(
            "SELECT id FROM outbox WHERE platform = $1
               AND (status = 'queued' OR (status = 'sending' AND claimed_at < $2))
               AND (kind <> 'ask' OR expires_at > $3)
             ORDER BY created_at LIMIT $4",
        )
        .bind(platform.as_str())
        .bind(stale)
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?
        .iter()
        .map(|r| r.try_get("id"))
        .collect::<Result<_, _>>()?;
        let mut claimed = Vec::with_capacity(ids.len());
        for id in ids {
            let done = sqlx::query(
                "UPDATE outbox SET status = 'sending', claimed_at = $1 WHERE id = $2
                   AND (status = 'queued' OR (status = 'sending' AND claimed_at < $3))",
            )
            .bind(now)
            .bind(&id)
            .bind(stale)
            .execute(&self.db.pool)
            .await?;
            if done.rows_affected() == 1 {
                if let Some(entry) = self.get(&id).await? {
                    claimed.push(entry);
                }
            }
        }
        Ok(claimed)
    }

    /// Records what the gateway sent for a claimed row.
    pub async fn sent(self, id: &OutboxId, message: MessageId) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE outbox SET status = 'sent', message_id = $1 WHERE id = $2 AND status = 'sending'",
        )
        .bind(message.0)
        .bind(id)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Records that the platform refused a claimed row.
    pub async fn failed(self, id: &OutboxId, error: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE outbox SET status = 'failed', error = $1 WHERE id = $2 AND status = 'sending'",
        )
        .bind(error)
        .bind(id)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Answers the open question posted as `message` in `chat` with `text`
    /// by `user`: `Some` for the one reply that answers it, `None` when the
    /// message answers no open question (or another reply came first).
    pub async fn answer_question(
        self,
        chat: &ChatAddress,
        message: MessageId,
        text: &str,
        user: &User,
    ) -> Result<Option<AnsweredQuestion>, StoreError> {
        let now = now();
        let rows = sqlx::query(
            "SELECT id, chat FROM outbox WHERE platform = $1 AND message_id = $2
               AND kind = 'ask' AND status = 'sent' AND expires_at > $3",
        )
        .bind(chat.platform.as_str())
        .bind(message.0)
        .bind(now)
        .fetch_all(&self.db.pool)
        .await?;
        for row in rows {
            let id: OutboxId = row.try_get("id")?;
            let at: String = row.try_get("chat")?;
            // Message ids are per chat on Telegram: the question's chat must match.
            let same_chat = serde_json::from_str::<ChatAddress>(&at)
                .map(|a| a.platform == chat.platform && a.chat == chat.chat)
                .unwrap_or(false);
            if !same_chat {
                continue;
            }
            let done = sqlx::query(
                "UPDATE outbox SET status = 'answered', answer = $1, answered_by = $2, answered_name = $3
                 WHERE id = $4 AND status = 'sent'",
            )
            .bind(text)
            .bind(user.id.0)
            .bind(&user.display_name)
            .bind(&id)
            .execute(&self.db.pool)
            .await?;
            if done.rows_affected() == 1 {
                return Ok(Some(AnsweredQuestion { id }));
            }
        }
        Ok(None)
    }

    /// Marks a question nobody answered by its deadline as expired: true
    /// for the caller that did.
    pub async fn expire_question(self, id: &OutboxId) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE outbox SET status = 'expired' WHERE id = $1 AND kind = 'ask'
               AND status IN ('queued', 'sending', 'sent') AND expires_at <= $2",
        )
        .bind(id)
        .bind(now())
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

fn entry_from_row(row: &sqlx::any::AnyRow) -> Result<OutboxEntry, StoreError> {
    let kind: String = row.try_get("kind")?;
    let status: String = row.try_get("status")?;
    let chat: String = row.try_get("chat")?;
    Ok(OutboxEntry {
        id: row.try_get("id")?,
        chat: serde_json::from_str(&chat)
            .map_err(|e| StoreError::Corrupt(format!("outbox chat: {e}")))?,
        request: OutboxRequest::from_columns(&kind, row.try_get("body")?)?,
        status: OutboxStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("outbox status {status:?}")))?,
        message: row.try_get::<Option<i64>, _>("message_id")?.map(MessageId),
        error: row.try_get("error")?,
        answer: row.try_get("answer")?,
        answered_by: row.try_get::<Option<i64>, _>("answered_by")?.map(UserId),
        answered_name: row.try_get("answered_name")?,
        created_at: dt(row.try_get("created_at")?),
        expires_at: dt(row.try_get("expires_at")?),
    })
}
