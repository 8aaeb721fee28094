//! Switchboard: a self-hosted gateway between an LLM agent and chat platforms.

pub mod agent;
pub mod approvals;
mod busy;
pub mod config;
pub mod gateway;
pub mod llm;
pub mod store;
pub mod tasks;
pub mod tools;
