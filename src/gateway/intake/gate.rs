//! The intake's own state: who may talk to the agent, and the per-user
//! allowances for messages and for approval presses.

use crate::gateway::intake::access::AccessControl;
use crate::gateway::intake::limiter::UserLimiter;

/// Access policy and per-user limits.
pub(crate) struct Gate {
    pub(crate) access: AccessControl,
    pub(crate) limiter: UserLimiter,
    /// Approval presses' own allowance (see `press_limit`).
    pub(crate) approval_presses: UserLimiter,
}
