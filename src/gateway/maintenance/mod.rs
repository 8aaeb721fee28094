//! Background upkeep: the periodic loop (expiry, schedules, take-over of
//! what dead processes left), the MCP relay's outbox, cards shown again at
//! start, pairing notices.

pub(super) mod pairing_notice;
pub(super) mod periodic;
pub(super) mod relay;
pub(super) mod reshow;
