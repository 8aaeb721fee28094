//! Switchboard: a self-hosted gateway between an LLM agent and chat platforms.

pub mod llm;
pub mod tools;
