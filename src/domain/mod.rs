//! The vocabulary every layer shares: typed ids, who and where a conversation
//! is, and what a turn waits for. It depends on nothing but the platform
//! contract; the store keeps its rows keyed by these types.

mod chat_modes;
mod conversation;
mod ids;
pub mod plan;
mod plan_legacy;
mod plan_view;
pub mod schedule;
mod turn;

pub use chat_modes::{QueueMode, Verbosity};
pub use conversation::{Conversation, SessionKey};
pub use ids::{
    short_id, ApprovalId, FeedbackId, IdError, OutboxId, ProcessId, RuleId, ScheduleId, SessionId,
    TaskId, TurnId,
};
pub use turn::{Pause, StopReason};
