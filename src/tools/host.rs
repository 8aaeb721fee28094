//! What a turn needs from its surroundings: asking for approvals, background
//! submission, a memory flush before compaction.

use super::{Tool, ToolSpec};
use crate::domain::ApprovalId;
pub use crate::domain::Pause;
use crate::llm::{Message, ToolCall};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// What became of a request for a decision on a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// A stored "always" rule allows it: run it now.
    Allowed,
    /// The card is recorded and the checkpoint stored: the turn ends here and
    /// is resumed, in any process, once the approval is decided.
    Paused(crate::domain::ApprovalId),
    /// There is no way to ask anyone (no confirm channel, or nowhere to keep
    /// the paused turn).
    Unavailable,
}

/// The decision a resumed turn brings for the call it paused on.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Run it, with these arguments (those on the card).
    Allowed {
        arguments: Value,
    },
    Denied {
        reason: Option<String>,
    },
    Expired,
    /// Sent back for editing and edited: ask again with these arguments.
    AskAgain {
        arguments: Value,
    },
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
    /// When the call it paused on is a sub-agent's delegation: the sub-agent's
    /// own checkpoint, paused on the approval (its first remaining call).
    pub nested: Option<Box<TurnCheckpoint>>,
}

/// A delegation resumed after its sub-agent's approval was decided: the
/// sub-agent continues from `checkpoint` with `resolution` for its call.
#[derive(Debug, Clone)]
pub struct NestedResume {
    pub checkpoint: TurnCheckpoint,
    pub resolution: Resolution,
}

/// Implemented by the gateway for each turn: it knows the chat, the requester
/// and the platform.
#[async_trait]
pub trait TurnHost: Send + Sync + 'static {
    /// Applies a stored rule, or records an approval for `call` (with these
    /// `arguments`) and stores `checkpoint` so the turn can pause. Never waits
    /// for the decision.
    async fn request_approval(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        arguments: &Value,
        summary: String,
        checkpoint: TurnCheckpoint,
    ) -> Asked;

    /// Starts `tool` as a background task; returns its task id at once.
    async fn start_background(
        &self,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        arguments: Value,
    ) -> Result<crate::domain::TaskId, String>;

    /// Called once `tool` is cleared to run (approved when it needs it),
    /// before it runs or its background task starts: where the host records
    /// that a tool with side effects ran, so that a crash from here on does
    /// not run the turn again. Default: nothing.
    async fn before_run(&self, _tool: &str) {}

    /// Called before `head` is folded into a summary by compaction, so what is
    /// worth remembering can be saved first (memory flush). Default: nothing.
    async fn before_compaction(&self, _head: &[Message]) {}

    /// The host a sub-agent that acts asks for its approvals (cards to the
    /// same requester); `None`: sub-agents cannot be approved.
    fn for_subagent(&self) -> Option<Arc<dyn TurnHost>> {
        None
    }

    /// A delegation's sub-agent paused on `approval` (recorded through
    /// [`TurnHost::for_subagent`]'s host, with the sub-agent's checkpoint):
    /// stores this turn's `checkpoint` around it so the whole turn pauses as
    /// one row. `false`: it could not be kept (the approval is withdrawn).
    async fn pause_nested(&self, _approval: &ApprovalId, _checkpoint: TurnCheckpoint) -> bool {
        false
    }

    /// Added to the system prompt of each model call of the turn, read anew
    /// every round (the plan and its current step). Default: nothing.
    async fn round_context(&self) -> Option<String> {
        None
    }

    /// Called after a round's tools ran, with its calls and their result
    /// messages: where the host records each result on the plan's current
    /// step. Returns the `plan_outcome` trace records. Default: nothing.
    async fn after_tools(&self, _calls: &[ToolCall], _results: &[Message]) -> Vec<Value> {
        Vec::new()
    }
}
