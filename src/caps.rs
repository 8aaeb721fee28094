//! Per-user caps: how much one user may keep running across all their chats
//! (background tasks, schedules), how long one turn may take, and how many
//! approval presses a minute get through once the user is rate-limited.

use std::time::Duration;

/// Background tasks (sub-agents included) one user may have queued or running
/// at once, across every chat, topic and gateway process (`MAX_TASKS_PER_USER`).
pub const DEFAULT_MAX_TASKS_PER_USER: usize = 5;
/// Active schedules one user may have across every chat and topic
/// (`MAX_SCHEDULES_PER_USER`).
pub const DEFAULT_MAX_SCHEDULES_PER_USER: usize = 10;
/// Total wall time of one turn, streaming and tools included, approval waits
/// excluded (`TURN_DEADLINE_SECS`).
pub const DEFAULT_TURN_DEADLINE: Duration = Duration::from_secs(600);
/// Approval presses a minute a user gets on their own allowance, so decisions
/// still go through while their messages and feedback presses are limited
/// (`APPROVAL_PRESSES_PER_MINUTE`).
pub const DEFAULT_APPROVAL_PRESSES_PER_MINUTE: u32 = 30;

/// The per-user caps (a slice of [`crate::config::Config`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserCaps {
    pub max_tasks: usize,
    pub max_schedules: usize,
    pub turn_deadline: Duration,
    pub approval_presses_per_minute: u32,
}

impl Default for UserCaps {
    fn default() -> UserCaps {
        UserCaps {
            max_tasks: DEFAULT_MAX_TASKS_PER_USER,
            max_schedules: DEFAULT_MAX_SCHEDULES_PER_USER,
            turn_deadline: DEFAULT_TURN_DEADLINE,
            approval_presses_per_minute: DEFAULT_APPROVAL_PRESSES_PER_MINUTE,
        }
    }
}
