//! How each MCP server's calls ended, for `/metrics`
//! (`switchboard_mcp_calls_total{server, outcome}`) and whether it is up
//! (`switchboard_mcp_server_up{server}`).

use crate::tools::ToolError;
use std::sync::atomic::{AtomicU64, Ordering};

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A tool error: the server's `isError`, a refusal, the server down or gone.
    Error,
    Timeout,
    Cancelled,
}

impl Outcome {
    const ALL: [Outcome; 4] = [
        Outcome::Ok,
        Outcome::Error,
        Outcome::Timeout,
        Outcome::Cancelled,
    ];

    pub fn of<T>(result: &Result<T, ToolError>) -> Outcome {
        match result {
            Ok(_) => Outcome::Ok,
            Err(ToolError::Timeout(_)) => Outcome::Timeout,
            Err(ToolError::Cancelled) => Outcome::Cancelled,
            Err(_) => Outcome::Error,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// One server's counters.
#[derive(Debug, Default)]
pub struct CallCounts([AtomicU64; 4]);

impl CallCounts {
    pub fn add(&self, outcome: Outcome) {
        self.0[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, outcome: Outcome) -> u64 {
        self.0[outcome as usize].load(Ordering::Relaxed)
    }
}

/// The two series for one server, as they are now: its `calls` and
/// whether it is `up`.
pub fn record(metrics: &crate::metrics::Metrics, server: &str, calls: &CallCounts, up: bool) {
    for outcome in Outcome::ALL {
        metrics.set_counter(
            "switchboard_mcp_calls_total",
            &[("server", server), ("outcome", outcome.as_str())],
            calls.get(outcome),
        );
    }
    metrics.set_gauge(
        "switchboard_mcp_server_up",
        &[("server", server)],
        i64::from(up),
    );
}
