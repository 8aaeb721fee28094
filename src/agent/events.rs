//! Runtime events: what a turn emits to the channel, the console, tests and traces.

pub use crate::domain::StopReason;
use crate::llm::{Message, ToolCall, Usage};
use std::time::Duration;

/// One event of a running turn, in order.
#[derive(Debug, Clone)]
pub enum RuntimeEvent {
    ModelStart {
        round: usize,
    },
    TextDelta(String),
    ThinkingDelta(String),
    ToolCalls(Vec<ToolCall>),
    ToolStart {
        call_id: String,
        name: String,
    },
    /// What a running foreground tool reports (a sub-agent's steps).
    ToolProgress {
        call_id: String,
        name: String,
        progress: crate::tools::Progress,
    },
    ToolResult {
        call_id: String,
        name: String,
        preview: String,
        duration: Duration,
    },
    ToolError {
        call_id: String,
        name: String,
        error: String,
        duration: Duration,
    },
    Compaction {
        messages_before: usize,
        messages_after: usize,
        /// Estimated tokens of the request before and after (tools and
        /// system prompt included).
        tokens_before: usize,
        tokens_after: usize,
    },
    Retry {
        attempt: u32,
        reason: String,
    },
    Usage(Usage),
    Done(TurnOutcome),
}

/// The end of a turn: the answer and what to append to the session's history.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The final text for the user (may be empty when the model said nothing).
    pub text: String,
    pub stop: StopReason,
    pub rounds: usize,
    pub usage: Usage,
    /// The input message and everything the turn produced, to persist.
    pub new_messages: Vec<Message>,
    /// Answers the intent guard sent back for lacking a required tool, and
    /// whether the final answer still lacked it (posted with a warning).
    pub intent_corrections: usize,
    pub intent_unmet: bool,
    /// Set when compaction folded part of the conversation into a summary.
    pub compaction: Option<super::compaction::Compacted>,
    /// Why the model call failed (`StopReason::ModelError`), for the operator:
    /// the endpoint's error with secrets removed.
    pub error: Option<String>,
    /// What the turn waits for (`StopReason::Paused`).
    pub pause: Option<crate::domain::Pause>,
}
