//! The vocabulary every layer shares: typed ids, who and where a conversation
//! is, and what a turn waits for. It depends on nothing but the platform
//! contract; the store keeps its rows keyed by these types.

mod conversation;
mod ids;
mod turn;

pub use conversation::{Conversation, SessionKey};
pub use ids::{short_id, ApprovalId, ScheduleId, SessionId, TaskId, TurnId};
pub use turn::{Pause, StopReason};
