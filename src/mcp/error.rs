//! Why connecting to an MCP server failed, for the transports and the
//! server's reconnect loop alike.

use std::time::Duration;

/// Why a connection attempt failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot confine `{command}`: {source}")]
    Sandbox {
        command: String,
        source: crate::tools::SandboxError,
    },
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("initialize failed: {0}")]
    Initialize(String),
    #[error("no answer to initialize within {0:?}")]
    InitTimeout(Duration),
    #[error("tools/list failed: {0}")]
    ListTools(String),
    #[error("cannot set up the HTTP client: {0}")]
    Http(String),
}
