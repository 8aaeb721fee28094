//! The MCP client: servers from `MCP_SERVERS_FILE` (Claude Desktop format),
//! each kept connected in its own task, their tools offered to the agent as
//! `mcp_<server>_<tool>` behind approval cards by default.

mod approval;
mod config;
mod counts;
mod error;
mod frozen;
mod http;
mod launch;
mod names;
mod observation;
mod reload;
pub mod serve;
mod server;
mod tool;

pub use approval::{Approval, ApprovalPolicy};
pub use config::{load_mcp_servers, McpProblem, McpServerDef, McpTransport, DEFAULT_CALL_TIMEOUT};
pub use counts::{CallCounts, Outcome as CallOutcome};
pub use error::ConnectError;
pub use frozen::REANNOTATED;
pub use launch::{server_dir, McpContext};
pub use names::{exposed_name, sanitize};
pub use observation::observation;
pub use reload::{LiveMcp, McpChange};
pub use serve::McpHttpConfig;
pub use server::{McpServer, ServerState, Status, INIT_TIMEOUT};
pub use tool::McpTool;

use crate::tools::{DynamicTools, Tool};
use std::collections::HashSet;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Most tools one server may offer (the providers take ~128 in all); the
/// rest of a longer list is skipped with a log line.
pub const MAX_TOOLS_PER_SERVER: usize = 100;

/// The configured servers, started.
#[derive(Default)]
pub struct McpClients {
    servers: Vec<Arc<McpServer>>,
}

impl McpClients {
    /// Starts every server at once and waits until each is up or down (at
    /// most [`INIT_TIMEOUT`] for a slow one). They stop on `shutdown`.
    pub async fn start(
        defs: &[McpServerDef],
        ctx: McpContext,
        shutdown: &CancellationToken,
    ) -> McpClients {
        let ctx = Arc::new(ctx);
        let servers: Vec<Arc<McpServer>> = defs
            .iter()
            .map(|def| McpServer::spawn(def.clone(), Arc::clone(&ctx), shutdown.child_token()))
            .collect();
        futures::future::join_all(servers.iter().map(|s| s.settled())).await;
        McpClients { servers }
    }

    /// Waits until every server has stopped (after the shutdown token fired).
    pub async fn stopped(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.stopped())).await;
    }

    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// The tools the servers list now, as agent tools; `taken` names (and
    /// a second tool with the same exposed name) are refused with a log line.
    pub fn tools(&self, taken: &[String]) -> Vec<Arc<dyn Tool>> {
        self.collect(taken, true)
    }

    fn collect(&self, taken: &[String], log: bool) -> Vec<Arc<dyn Tool>> {
        let mut seen: HashSet<String> = taken.iter().cloned().collect();
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for server in &self.servers {
            let mut offered = 0;
            for remote in server.state().tools {
                if offered == MAX_TOOLS_PER_SERVER {
                    break;
                }
                let Some(tool) = McpTool::new(Arc::clone(server), &remote) else {
                    continue;
                };
                let name = tool.spec().name.clone();
                if !seen.insert(name.clone()) {
                    if log {
                        tracing::warn!(server = %server.name(), tool = %remote.name, name = %name, "MCP tool refused: its name is taken");
                    }
                    continue;
                }
                out.push(Arc::new(tool));
                offered += 1;
            }
        }
        out
    }
}

/// `/metrics`' series of every server in `servers`
/// (`switchboard_mcp_calls_total`, `switchboard_mcp_server_up`), as they are now.
pub fn record_metrics(metrics: &crate::metrics::Metrics, servers: &[Arc<McpServer>]) {
    for server in servers {
        let up = server.state().peer.is_some();
        counts::record(metrics, server.name(), &server.calls, up);
    }
}

/// The registry asks for the tools each time: a server that comes up late,
/// or changes its list, is offered as it is now.
impl DynamicTools for McpClients {
    fn current(&self, taken: &[String]) -> Vec<Arc<dyn Tool>> {
        self.collect(taken, false)
    }
}
