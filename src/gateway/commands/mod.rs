//! The gateway's own slash commands: one file per command family behind the
//! dispatch table in [`dispatch`].

pub(super) mod approvals;
pub(super) mod approve;
pub(super) mod checkins;
pub(super) mod dispatch;
pub(super) mod identity;
pub(super) mod memory;
pub(super) mod menu;
pub(super) mod model;
pub(super) mod plan;
pub(super) mod settings;
pub(super) mod tasks;
pub(super) mod tools;
pub(super) mod usage;
pub(super) mod verbose;

pub use dispatch::COMMANDS;
pub(crate) use dispatch::{input_after_name, menu, parse, run, Builtin, Command};
