//! The gateway's side of `switchboard mcp`: that process has no platform
//! adapters, so it queues what an external agent asked for in the outbox and
//! this gateway posts it — a notice, an approval card (decided by the card's
//! buttons like any other), or a question whose reply is written back.

use crate::domain::ApprovalId;
use crate::gateway::Inner;
use crate::store::{OutboxEntry, OutboxRequest};
use std::sync::Arc;
use switchboard_platform::{InboundMessage, OutgoingMessage, PlatformAdapter};

/// Rows claimed per platform per pass.
const BATCH: u32 = 20;

/// What the person who answered a question reads.
pub(crate) const ANSWER_PASSED_ON: &str = "✅ Passed on to the agent that asked.";

/// Posts every queued outbox row for the platforms this gateway runs (each
/// claimed first, so of several processes exactly one posts it).
pub(crate) async fn deliver_outbox(inner: &Arc<Inner>) {
    for (platform, adapter) in &inner.platforms.adapters {
        let claimed = match inner.store.outbox().claim(*platform, BATCH).await {
            Ok(claimed) => claimed,
            Err(e) => return tracing::warn!(error = %e, "could not look at the outbox"),
        };
        for entry in claimed {
            deliver(inner, adapter.as_ref(), &entry).await;
        }
    }
}

async fn deliver(inner: &Inner, adapter: &dyn PlatformAdapter, entry: &OutboxEntry) {
    let sent = match &entry.request {
        OutboxRequest::Notify(text) | OutboxRequest::Ask(text) => adapter
            .send(&entry.chat, OutgoingMessage::text(text.clone()))
            .await
            .map_err(|e| e.to_string()),
        OutboxRequest::Approval(id) => show_card(inner, adapter, id).await,
    };
    let recorded = match sent {
        Ok(message) => inner.store.outbox().sent(&entry.id, message.id).await,
        Err(error) => {
            tracing::warn!(kind = entry.request.kind().as_str(), error = %error, "could not post an MCP client's request");
            inner.store.outbox().failed(&entry.id, &error).await
        }
    };
    if let Err(e) = recorded {
        tracing::warn!(error = %e, "could not record an outbox delivery");
    }
}

/// Shows the card of an external approval (still pending: one decided or
/// expired meanwhile is not shown).
async fn show_card(
    inner: &Inner,
    adapter: &dyn PlatformAdapter,
    approval_id: &ApprovalId,
) -> Result<switchboard_platform::MessageRef, String> {
    let record = match inner.store.approvals().get(approval_id).await {
        Ok(Some(r)) if r.status == crate::store::ApprovalStatus::Pending => r,
        Ok(Some(_)) => return Err("the approval was decided before its card was shown".into()),
        Ok(None) => return Err("the approval is unknown".into()),
        Err(e) => return Err(e.to_string()),
    };
    inner
        .approvals
        .show(adapter, &record)
        .await
        .map_err(|e| e.to_string())
}

/// Takes `msg` as the answer to an MCP client's open question when it is a
/// reply to one: true when it answered (the caller stops there).
pub(crate) async fn answer_question(inner: &Inner, msg: &InboundMessage) -> bool {
    let Some(question) = msg.reply_to else {
        return false;
    };
    match inner
        .store
        .outbox()
        .answer_question(&msg.chat, question, &msg.text, &msg.user)
        .await
    {
        Ok(Some(answered)) => {
            inner
                .store
                .audit()
                .record(
                    "mcp.answered",
                    serde_json::json!({ "id": answered.id, "by": msg.user.id.0 }),
                )
                .await;
            true
        }
        Ok(None) => false,
        Err(e) => {
            tracing::warn!(error = %e, "could not look for an MCP question this message answers");
            false
        }
    }
}
