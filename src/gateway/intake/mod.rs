//! Intake: what an inbound event passes before it reaches a session — the
//! filter and access policy, the per-user limits, keeping the accepted
//! message (inbox row or local spool), commands answered inline, and
//! button presses.

pub(super) mod access;
pub(super) mod gate;
pub(super) mod inbound;
pub(super) mod inline;
pub(super) mod kept;
pub(super) mod limiter;
pub(super) mod menu_press;
pub(super) mod press_limit;
pub(super) mod presses;
pub(super) mod reactions;
