//! What a turn needs from its surroundings: approvals and background submission.

use crate::llm::{Message, ToolCall};
use crate::tools::{Tool, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// The decision on a tool call that needs approval.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalOutcome {
    /// Run it, with these arguments (the user may have edited them).
    Allowed {
        arguments: Value,
    },
    Denied {
        reason: Option<String>,
    },
    Expired,
    /// There is no way to ask anyone (no confirm channel).
    Unavailable,
    /// Another process (or a restart) resumed this turn from its stored state;
    /// this copy must stop without answering.
    Abandoned,
}

/// Everything needed to resume a turn paused on an approval, possibly in
/// another process: the conversation so far (this round's finished results
/// included) and the round's calls not run yet, the first awaiting approval.
#[derive(Debug, Clone)]
pub struct TurnCheckpoint {
    pub messages: Vec<Message>,
    /// Index of the turn's input message in `messages`.
    pub new_from: usize,
    pub remaining: Vec<ToolCall>,
    /// The round the turn paused in (a resumed turn keeps counting from it).
    pub round: usize,
    /// What the turn added to the system prompt (memories note, task state, rules).
    pub system_context: Option<String>,
}

/// Implemented by the gateway for each turn: it knows the chat, the requester
/// and the platform.
#[async_trait]
pub trait TurnHost: Send + Sync + 'static {
    /// Asks for (or finds a stored rule for) a decision on `call`. Waits.
    async fn approve(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        arguments: &Value,
        summary: String,
        checkpoint: TurnCheckpoint,
    ) -> ApprovalOutcome;

    /// Starts `tool` as a background task; returns its task id at once.
    async fn start_background(
        &self,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        arguments: Value,
    ) -> Result<String, String>;

    /// Called before `head` is folded into a summary by compaction, so what is
    /// worth remembering can be saved first (memory flush). Default: nothing.
    async fn before_compaction(&self, _head: &[Message]) {}
}
