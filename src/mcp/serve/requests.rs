//! What each of `switchboard mcp`'s tools does: queue the request in the
//! database for the running gateway to post, and wait (polling the row) for
//! its outcome. Everything is durable: a client that asks again with the
//! same request id after either process restarted gets the first request's
//! outcome, not a second card.

use crate::approvals::EXTERNAL_APPROVAL;
use crate::domain::{ApprovalId, IdError, OutboxId, SessionId};
use crate::store::{
    ApprovalRecord, ApprovalStatus, OutboxRequest, OutboxStatus, Store, StoreError,
};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::str::FromStr;
use std::time::Duration;
use switchboard_platform::{ChatAddress, UserId};
use tokio_util::sync::CancellationToken;

/// How often a waiting call looks at its row.
const POLL: Duration = Duration::from_millis(250);
/// How long `notify` waits for the gateway to post before answering
/// "queued" (the notice stays queued and is posted when a gateway runs).
const NOTIFY_WAIT: Duration = Duration::from_secs(15);
/// A question's default deadline.
const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// What a request ends with: a JSON result for the client, or an error
/// it reads (`is_error`).
pub type Outcome = Result<Value, String>;

/// The requests of one client.
pub struct Requests {
    pub store: Store,
    pub target: ChatAddress,
    pub approval_timeout: Duration,
}

/// The row id of a request: derived from the client's request id (so asking
/// again finds it), else fresh. 32 hex digits, like every approval id.
fn row_id<I>(tool: &str, request_id: Option<&str>) -> Result<I, String>
where
    I: TryFrom<String, Error = IdError>,
{
    let text = match request_id {
        Some(r) => {
            let digest = Sha256::digest(format!("mcp:{tool}:{r}").as_bytes());
            crate::hex::encode(&digest[..16])
        }
        None => uuid::Uuid::new_v4().simple().to_string(),
    };
    I::try_from(text).map_err(|e| e.to_string())
}

/// The outbox row that shows an approval's card: the same text as its id.
pub(super) fn card_row(id: &ApprovalId) -> Result<OutboxId, String> {
    id.as_str().parse().map_err(|e: IdError| e.to_string())
}

fn deadline(timeout: Duration) -> DateTime<Utc> {
    Utc::now() + chrono::Duration::from_std(timeout).unwrap_or(chrono::Duration::minutes(10))
}

pub(super) fn store_error(e: StoreError) -> String {
    format!("the gateway's database is not available: {e}")
}

impl Requests {
    pub async fn notify(
        &self,
        client: &str,
        text: &str,
        request_id: Option<&str>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let id: OutboxId = row_id("notify", request_id)?;
        let body = format!("📣 **{}**\n{text}", clip(client));
        let (_, inserted) = self
            .store
            .outbox()
            .queue(
                &id,
                &self.target,
                &OutboxRequest::Notify(body),
                deadline(NOTIFY_WAIT),
            )
            .await
            .map_err(store_error)?;
        if inserted {
            self.audit("mcp.notify", id.as_str(), client).await;
        }
        let until = tokio::time::Instant::now() + NOTIFY_WAIT;
        loop {
            let entry = self.store.outbox().get(&id).await.map_err(store_error)?;
            match entry
                .as_ref()
                .map(|e| (e.status, e.message, e.error.clone()))
            {
                Some((OutboxStatus::Sent, message, _)) => {
                    return Ok(json!({"status": "sent", "message_id": message.map(|m| m.0)}))
                }
                Some((OutboxStatus::Failed, _, error)) => {
                    return Err(format!(
                        "the platform refused the message: {}",
                        error.unwrap_or_default()
                    ))
                }
                _ => {}
            }
            if tokio::time::Instant::now() >= until {
                return Ok(json!({"status": "queued",
                    "note": "no gateway has posted it yet; it stays queued and is posted when `switchboard run` runs with this platform"}));
            }
            if !pause(cancel).await {
                return Err("cancelled by the client".into());
            }
        }
    }

    pub async fn request_approval(
        &self,
        client: &str,
        action: &str,
        details: &str,
        timeout: Option<Duration>,
        request_id: Option<&str>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let id: ApprovalId = row_id("approval", request_id)?;
        let existing = self.store.approvals().get(&id).await.map_err(store_error)?;
        let record = match existing {
            Some(record) => record,
            None => {
                let record = self.new_approval(
                    &id,
                    client,
                    action,
                    details,
                    timeout.unwrap_or(self.approval_timeout),
                )?;
                self.store
                    .approvals()
                    .insert(&record)
                    .await
                    .map_err(store_error)?;
                self.store
                    .outbox()
                    .queue(
                        &card_row(&id)?,
                        &self.target,
                        &OutboxRequest::Approval(id.clone()),
                        record.expires_at,
                    )
                    .await
                    .map_err(store_error)?;
                self.audit("mcp.approval_requested", id.as_str(), client)
                    .await;
                record
            }
        };
        loop {
            let now = Utc::now();
            let current = self
                .store
                .approvals()
                .get(&id)
                .await
                .map_err(store_error)?
                .unwrap_or(record.clone());
            if current.status != ApprovalStatus::Pending {
                return Ok(decision(&current));
            }
            if let Some(failed) = self.failed(&card_row(&id)?).await? {
                return Err(format!(
                    "the gateway could not post the approval card: {failed}"
                ));
            }
            // No gateway swept it (none running): expire it here, so a late
            // press finds it decided.
            if current.expires_at <= now - chrono::Duration::seconds(2) {
                if let Ok(Some(expired)) = self.store.approvals().expire(&id, now).await {
                    return Ok(decision(&expired));
                }
            }
            if !pause(cancel).await {
                return Err("cancelled by the client; the card stays open until it expires".into());
            }
        }
    }

    pub async fn ask(
        &self,
        client: &str,
        question: &str,
        timeout: Option<Duration>,
        request_id: Option<&str>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let id: OutboxId = row_id("ask", request_id)?;
        let body = format!(
            "❓ **{} asks**\n{question}\n\n_Reply to this message to answer._",
            clip(client)
        );
        let (_, inserted) = self
            .store
            .outbox()
            .queue(
                &id,
                &self.target,
                &OutboxRequest::Ask(body),
                deadline(timeout.unwrap_or(ASK_TIMEOUT)),
            )
            .await
            .map_err(store_error)?;
        if inserted {
            self.audit("mcp.ask", id.as_str(), client).await;
        }
        loop {
            let Some(entry) = self.store.outbox().get(&id).await.map_err(store_error)? else {
                return Err("the question vanished from the database".into());
            };
            match entry.status {
                OutboxStatus::Answered => {
                    return Ok(json!({"status": "answered", "answer": entry.answer,
                        "answered_by": entry.answered_name, "answered_by_id": entry.answered_by.map(|u| u.0)}))
                }
                OutboxStatus::Failed => {
                    return Err(format!(
                        "the platform refused the question: {}",
                        entry.error.unwrap_or_default()
                    ))
                }
                OutboxStatus::Expired => return Ok(json!({"status": "expired"})),
                _ => {}
            }
            if entry.expires_at <= Utc::now()
                && self
                    .store
                    .outbox()
                    .expire_question(&id)
                    .await
                    .map_err(store_error)?
            {
                return Ok(json!({"status": "expired"}));
            }
            if !pause(cancel).await {
                return Err("cancelled by the client".into());
            }
        }
    }

    fn new_approval(
        &self,
        id: &ApprovalId,
        client: &str,
        action: &str,
        details: &str,
        timeout: Duration,
    ) -> Result<ApprovalRecord, String> {
        let now = Utc::now();
        let summary = if details.is_empty() {
            action.to_owned()
        } else {
            format!("{action}\n\n{details}")
        };
        Ok(ApprovalRecord {
            id: id.clone(),
            session_id: SessionId::from_str(crate::approvals::MCP_ORIGIN)
                .map_err(|e| e.to_string())?,
            tool_name: EXTERNAL_APPROVAL.into(),
            tool_display: "External agent request".into(),
            arguments: json!({"action": action, "details": details}).to_string(),
            summary,
            // Nobody's id: only approvers can decide.
            requester: UserId(0),
            requester_name: format!("MCP client {}", clip(client)),
            chat: self.target,
            card_message: None,
            status: ApprovalStatus::Pending,
            decided_by: None,
            decided_by_name: None,
            decided_at: None,
            reason: None,
            created_at: now,
            expires_at: deadline(timeout),
        })
    }

    async fn failed(&self, id: &OutboxId) -> Result<Option<String>, String> {
        failed(&self.store, id).await
    }

    async fn audit(&self, kind: &str, id: &str, client: &str) {
        self.store
            .audit()
            .record(kind, json!({"id": id, "client": clip(client), "by": "mcp"}))
            .await;
    }
}

/// The platform's refusal of an outbox row, if it failed.
pub(super) async fn failed(store: &Store, id: &OutboxId) -> Result<Option<String>, String> {
    let entry = store.outbox().get(id).await.map_err(store_error)?;
    Ok(entry
        .filter(|e| e.status == OutboxStatus::Failed)
        .map(|e| e.error.unwrap_or_default()))
}

/// What a decided approval tells the client.
fn decision(record: &ApprovalRecord) -> Value {
    let word = match record.status {
        ApprovalStatus::Allowed | ApprovalStatus::Always => "approved",
        ApprovalStatus::Denied => "denied",
        ApprovalStatus::Expired | ApprovalStatus::Pending | ApprovalStatus::Edited => "expired",
    };
    json!({
        "decision": word,
        "decided_by": record.decided_by_name,
        "decided_by_id": record.decided_by.map(|u| u.0),
        "platform": record.chat.platform.as_str(),
        "reason": record.reason,
        "decided_at": record.decided_at.map(|t| t.to_rfc3339()),
    })
}

/// A client's self-chosen name, shown in the chat: short, one line.
pub(super) fn clip(name: &str) -> String {
    let one_line: String = name.chars().filter(|c| !c.is_control()).take(60).collect();
    if one_line.trim().is_empty() {
        "An MCP client".into()
    } else {
        one_line
    }
}

/// Waits one poll interval: false when the client cancelled the call.
pub(super) async fn pause(cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(POLL) => true,
        () = cancel.cancelled() => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_map_to_stable_approval_shaped_ids() {
        let id = |tool, request| row_id::<OutboxId>(tool, request).unwrap();
        let a = id("approval", Some("deploy-42"));
        assert_eq!(a, id("approval", Some("deploy-42")));
        assert_ne!(a, id("ask", Some("deploy-42")));
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(id("notify", None), id("notify", None));
        let approval: ApprovalId = row_id("approval", Some("deploy-42")).unwrap();
        assert_eq!(card_row(&approval).unwrap(), a);
    }

    #[test]
    fn client_names_are_one_short_line() {
        assert_eq!(clip("claude-code\n\u{1b}[31m"), "claude-code[31m");
        assert_eq!(clip(" "), "An MCP client");
        assert_eq!(clip(&"x".repeat(100)).len(), 60);
    }
}
