//! The turn: prompt assembly (history, memory, live state, identity, the
//! chat's settings), the run with the gateway's host for approvals and
//! tasks, resuming a paused turn, and the turn in flight.

pub(super) mod ask;
pub(super) mod attachments;
pub(super) mod budget;
pub(super) mod consent;
pub(super) mod deliver;
pub(super) mod exchange;
pub(super) mod fresh;
pub(super) mod host;
pub(super) mod in_flight;
pub(super) mod live_check;
pub(super) mod live_state;
pub(super) mod memory;
pub(super) mod planner;
pub(super) mod profile_card;
pub(super) mod prompt;
pub(super) mod reasoning;
pub(super) mod resume;
pub(super) mod run;
pub(super) mod runner;
pub(super) mod sub_host;
pub(super) mod usage;
