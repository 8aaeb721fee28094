//! Long-term memory: extraction, recall, feedback and compaction.
//!
//! One test binary for the area; each module was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod memory_common;
mod memory_compaction;
mod memory_consent;
mod memory_extract;
mod memory_feedback;
mod memory_gc;
mod memory_history_semantic;
mod memory_identity;
mod memory_learn;
mod memory_looking_back;
mod memory_plan;
mod memory_recall;
mod memory_reflect;
mod memory_semantic;
