//! How a turn ends: why it stopped, and what a paused one waits for.

use super::ApprovalId;

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
    /// A call waits for a decision (the outcome's [`Pause`]): the turn is
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

/// Why a turn stopped before its answer: it waits for something outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pause {
    /// The approval with this id; deciding it resumes the turn.
    Approval(ApprovalId),
}
