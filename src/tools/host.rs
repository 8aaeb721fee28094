//! What a turn paused on an approval keeps and brings back: the answer to a
//! request, the decision, the checkpoint (the host itself is in `spec`).

pub use crate::domain::Pause;
use crate::llm::{Message, ToolCall};
use serde_json::Value;

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
