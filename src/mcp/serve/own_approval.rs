//! The approval of an own-tool call over MCP that needs one: the same rules
//! as in a chat (a stored "always" rule of the user allows it at once),
//! else a card in `MCP_NOTIFY_CHAT` queued for the running gateway to show,
//! and the call waits for its decision (bounded by `APPROVAL_TIMEOUT`). The
//! card has no Edit: nobody types new arguments into another agent's call.

use super::requests::{card_row, failed, pause, store_error};
use crate::approvals::{ApprovalRequest, Approvals, MCP_ORIGIN};
use crate::clock::SystemClock;
use crate::domain::{ApprovalId, SessionId};
use crate::store::{ApprovalStatus, OutboxRequest, Store};
use chrono::Utc;
use serde_json::Value;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{ChatAddress, User};
use tokio_util::sync::CancellationToken;

/// What became of asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed: by a stored rule, or on the card by `by`.
    Allowed { by: Option<String> },
    /// Not allowed; the text says why (for the client and the audit log).
    Refused(String),
}

/// Asks for approvals of the configured user's calls.
pub struct OwnApproval {
    store: Store,
    approvals: Approvals,
    /// `MCP_NOTIFY_CHAT`: where cards go.
    target: Option<ChatAddress>,
}

/// One call to be approved.
pub struct Asked<'a> {
    pub user: &'a User,
    pub tool_name: &'a str,
    pub tool_display: &'a str,
    pub arguments: &'a Value,
    pub summary: String,
}

impl OwnApproval {
    pub fn new(store: Store, target: Option<ChatAddress>, timeout: Duration) -> OwnApproval {
        OwnApproval {
            approvals: Approvals::new(store.clone(), timeout, Arc::new(SystemClock)),
            store,
            target,
        }
    }

    /// Decides `asked` for the user of `platform`: a rule, else a card.
    pub async fn ask(
        &self,
        platform: switchboard_platform::Platform,
        asked: Asked<'_>,
        cancel: &CancellationToken,
    ) -> Result<Verdict, String> {
        let ruled = self
            .approvals
            .ruled(platform, asked.user, asked.tool_name, asked.arguments)
            .await
            .map_err(|e| e.to_string())?;
        if ruled {
            return Ok(Verdict::Allowed { by: None });
        }
        // A card's decision and its "always" rule belong to the user on the
        // card's platform: it must be the user's own.
        let Some(target) = self.target.filter(|t| t.platform == platform) else {
            return Ok(Verdict::Refused(format!(
                "`{}` needs the user's approval, and there is no chat to ask in: the operator has not set MCP_NOTIFY_CHAT on the user's platform ({}), so the call was not run",
                asked.tool_name,
                platform.as_str()
            )));
        };
        let id = ApprovalId::new();
        let session = SessionId::from_str(MCP_ORIGIN).map_err(|e| e.to_string())?;
        let record = self
            .approvals
            .record(ApprovalRequest {
                id: id.clone(),
                session_id: &session,
                requester: asked.user,
                chat: target,
                tool_name: asked.tool_name,
                tool_display: asked.tool_display,
                arguments: asked.arguments,
                summary: asked.summary,
            })
            .await
            .map_err(|e| e.to_string())?;
        self.store
            .outbox()
            .queue(
                &card_row(&id)?,
                &target,
                &OutboxRequest::Approval(id.clone()),
                record.expires_at,
            )
            .await
            .map_err(store_error)?;
        self.wait(&id, cancel).await
    }

    /// Waits for the decision of `id`; expires it here when no gateway did.
    async fn wait(&self, id: &ApprovalId, cancel: &CancellationToken) -> Result<Verdict, String> {
        loop {
            let Some(current) = self.store.approvals().get(id).await.map_err(store_error)? else {
                return Err("the approval vanished from the database".into());
            };
            let by = current.decided_by_name.clone();
            match current.status {
                ApprovalStatus::Allowed | ApprovalStatus::Always => {
                    return Ok(Verdict::Allowed { by })
                }
                ApprovalStatus::Denied => {
                    let reason = current
                        .reason
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default();
                    return Ok(Verdict::Refused(format!(
                        "denied by {}{reason}",
                        by.unwrap_or_else(|| "the chat".into())
                    )));
                }
                ApprovalStatus::Expired | ApprovalStatus::Edited => {
                    return Ok(Verdict::Refused(
                        "the approval expired without a decision (treated as denied)".into(),
                    ))
                }
                ApprovalStatus::Pending => {}
            }
            if let Some(why) = failed(&self.store, &card_row(id)?).await? {
                return Ok(Verdict::Refused(format!(
                    "the gateway could not post the approval card: {why}"
                )));
            }
            let now = Utc::now();
            if current.expires_at <= now - chrono::Duration::seconds(2) {
                // No gateway swept it: expire it here, so a late press finds it decided.
                if let Ok(Some(_)) = self.store.approvals().expire(id, now).await {
                    return Ok(Verdict::Refused(
                        "the approval expired without a decision (treated as denied)".into(),
                    ));
                }
            }
            if !pause(cancel).await {
                return Err("cancelled by the client; the card stays open until it expires".into());
            }
        }
    }
}
