//! Pieces shared by the tools that read the past back
//! (`query_my_chat_history`, `get_my_reflections`, `get_my_feedback`): their
//! read-only spec, a storage failure as a tool error, quoted text.

use super::spec::{ToolError, ToolSpec};
use serde_json::Value;

/// The spec of a tool that only reads.
pub(super) fn read_only(
    name: &str,
    display: &str,
    description: &str,
    parameters: Value,
) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        display_name: display.into(),
        description: description.into(),
        parameters,
        concurrency_safe: true,
        requires_approval: false,
        background: false,
        key_fields: Vec::new(),
    }
}

/// A storage failure as the tool's error (the cause in its diagnostics).
pub(super) fn storage(e: impl std::fmt::Display) -> ToolError {
    ToolError::Failed {
        message: "the conversation store is unavailable".into(),
        diagnostics: Some(e.to_string()),
    }
}

/// Quoted text: one line, markers defused, at most `max` characters.
pub(super) fn quoted(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let defused = crate::markers::defuse(&line).into_owned();
    match defused.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &defused[..at]),
        None => defused,
    }
}
