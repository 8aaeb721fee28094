//! The size limit of a tool call's arguments, and calls as the history keeps them.

use crate::llm::ToolCall;

/// The largest arguments a tool call may carry (a model writing a huge
/// argument costs parsing, a card, a history row and every later request).
pub(super) const MAX_ARGUMENT_BYTES: usize = 1 << 20;

/// `calls` as the conversation keeps them: arguments over
/// [`MAX_ARGUMENT_BYTES`] (refused when run) replaced by a small object that
/// says so, so the history stays sendable.
pub(super) fn storable(calls: &[ToolCall]) -> Vec<ToolCall> {
    calls
        .iter()
        .map(|c| {
            if c.arguments.len() <= MAX_ARGUMENT_BYTES {
                return c.clone();
            }
            ToolCall {
                arguments: serde_json::json!({ "omitted": format!("{} bytes of arguments, refused", c.arguments.len()) })
                    .to_string(),
                ..c.clone()
            }
        })
        .collect()
}
