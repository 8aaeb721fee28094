//! Switchboard: a self-hosted gateway between an LLM agent and chat platforms.
//!
//! The library exposes [`run`] (every configured platform) and [`start`] (any set
//! of adapters, e.g. the console or a test channel); the binary is a thin CLI.

pub mod agent;
mod app;
pub mod approvals;
mod busy;
use switchboard_platform::failpoint;
pub mod caps;
pub mod chats;
pub mod clock;
pub mod config;
pub mod dirs;
pub mod domain;
pub mod env;
mod footprint;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod gateway;
mod health;
mod heartbeat;
mod hex;
pub mod identity;
pub mod llm;
pub mod loaded;
pub mod markers;
#[cfg(test)]
mod markers_props;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod metrics;
pub mod models;
pub mod portfolio;
pub mod secrets;
pub mod skills;
pub mod store;
pub mod tasks;
pub mod telemetry;
mod text;
pub mod tools;
mod visible;
#[cfg(test)]
mod visible_props;
pub mod web;
pub mod wiring;
pub mod workspace;

pub use app::{
    build_provider, build_tools, load_skills, mcp_own_tools, run, start, start_with_clock,
    RunError, Running,
};
pub use busy::{Busy, BusyGuard};
pub use config::Config;
