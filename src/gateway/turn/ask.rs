//! Asking for a decision on a call: a stored rule that allows it, or a
//! recorded approval (the main agent's and a sub-agent's alike).

use crate::approvals::ApprovalRequest;
use crate::domain::{ApprovalId, SessionId};
use crate::gateway::Inner;
use crate::llm::ToolCall;
use crate::store::{ApprovalRecord, Conversation};
use serde_json::Value;

/// What became of asking for a decision on a call.
pub(in crate::gateway) enum Recorded {
    /// A stored "always" rule allows it.
    Allowed,
    /// The approval is recorded (its card not shown yet).
    Asking(Box<ApprovalRecord>),
    /// Nobody can be asked (storage failed).
    Unavailable,
}

/// Applies the requester's stored rules to `call`, or records an approval
/// for it with these `arguments`, shown as `display`.
pub(in crate::gateway) async fn record(
    inner: &Inner,
    session_id: &SessionId,
    conversation: &Conversation,
    display: &str,
    call: &ToolCall,
    arguments: &Value,
    summary: String,
) -> Recorded {
    let approvals = &inner.approvals;
    let (platform, user) = (conversation.chat.platform, &conversation.user);
    match approvals.ruled(platform, user, &call.name, arguments).await {
        Ok(true) => return Recorded::Allowed,
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(error = %e, "approval could not be requested");
            return Recorded::Unavailable;
        }
    }
    let request = ApprovalRequest {
        id: ApprovalId::new(),
        session_id,
        requester: user,
        chat: conversation.chat,
        tool_name: &call.name,
        tool_display: display,
        arguments,
        summary,
    };
    match approvals.record(request).await {
        Ok(record) => Recorded::Asking(Box::new(record)),
        Err(e) => {
            tracing::warn!(error = %e, "approval could not be requested");
            Recorded::Unavailable
        }
    }
}
