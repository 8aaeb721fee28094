//! How a failed file access reads to the model (`read_file`, `write_file`, `send_file`).

use super::ToolError;
use std::io;

/// The tool error for `e`, met accessing the file shown as `shown`.
pub(super) fn io_failure(shown: &str, e: &io::Error) -> ToolError {
    let message = match e.kind() {
        io::ErrorKind::NotFound => format!("`{shown}` does not exist"),
        io::ErrorKind::PermissionDenied => format!("permission denied for `{shown}`"),
        _ => format!("cannot access `{shown}`: {e}"),
    };
    ToolError::failed(message)
}
