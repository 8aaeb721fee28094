//! What a turn needs from its surroundings: approvals and background submission.

use crate::llm::ToolCall;
use crate::tools::{Tool, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// The decision on a tool call that needs approval.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalOutcome {
    /// Run it, with these arguments (the user may have edited them).
    Allowed { arguments: Value },
    Denied { reason: Option<String> },
    Expired,
    /// There is no way to ask anyone (no confirm channel).
    Unavailable,
}

/// Implemented by the gateway for each turn: it knows the chat, the requester
/// and the platform.
#[async_trait]
pub trait TurnHost: Send + Sync + 'static {
    /// Asks for (or finds a stored rule for) a decision on `call`. Waits.
    async fn approve(&self, spec: &ToolSpec, call: &ToolCall, arguments: &Value, summary: String) -> ApprovalOutcome;

    /// Starts `tool` as a background task; returns its task id at once.
    async fn start_background(&self, tool: Arc<dyn Tool>, call: &ToolCall, arguments: Value) -> Result<String, String>;
}
