//! The gateway's own slash commands: one file per command family behind the
//! dispatch table in [`dispatch`]; the vocabulary (names, parser, `/help`,
//! menus) in [`parse`].

pub(super) mod approvals;
pub(super) mod approve;
pub(super) mod checkins;
pub(super) mod choices;
pub(super) mod dispatch;
pub(super) mod identity;
pub(super) mod memory;
pub(super) mod menu;
pub(super) mod model;
pub(super) mod parse;
pub(super) mod plan;
pub(super) mod settings;
pub(super) mod skills;
pub(super) mod stop;
pub(super) mod tasks;
pub(super) mod tools;
pub(super) mod usage;
pub(super) mod verbose;
pub(super) mod voice;

pub(crate) use dispatch::run;
pub use parse::COMMANDS;
pub(crate) use parse::{input_after_name, menu, parse, Builtin, Command};
