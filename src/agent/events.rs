//! Runtime events: what a turn emits to the channel, the console, tests and traces.

use crate::llm::{Message, ToolCall, Usage};
use std::time::Duration;

/// Why a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without further tool calls.
    Answered,
    /// The model asked the user a question (`ask_user`) and waits.
    WaitingForUser,
    /// `MAX_TOOL_ROUNDS` reached.
    MaxRounds,
    /// The model call failed; `Done::text` explains it to the user.
    ModelError,
    Cancelled,
    /// A call waits for a decision ([`TurnOutcome::pause`]): the turn is
    /// stored, not finished; `Done::text` is what it said so far.
    Paused,
    /// `TURN_DEADLINE_SECS` reached (streaming and tools included); `Done::text`
    /// tells the user.
    Deadline,
}

impl StopReason {
    /// A stable snake_case name (metrics labels, logs).
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::Answered => "answered",
            StopReason::WaitingForUser => "waiting_for_user",
            StopReason::MaxRounds => "max_rounds",
            StopReason::ModelError => "model_error",
            StopReason::Cancelled => "cancelled",
            StopReason::Paused => "paused",
            StopReason::Deadline => "deadline",
        }
    }
}

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
    },
    Compaction {
        messages_before: usize,
        messages_after: usize,
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
    pub pause: Option<super::host::Pause>,
}
