//! Sessions: one worker per conversation running one input at a time, its
//! queue and queue mode, `/stop`, and holding input while storage is down.

pub(super) mod hold;
pub(super) mod input;
pub(super) mod queue;
pub(super) mod queue_mode;
pub(super) mod runner;
pub(super) mod running;
pub(super) mod sessions;
pub(super) mod worker;
