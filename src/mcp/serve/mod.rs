//! `switchboard mcp`: an MCP server over stdio, or over Streamable HTTP with
//! a bearer token (`MCP_LISTEN`, see [`router`]), that lets an external agent
//! (Claude Code, Cursor, another bot) reach a person through their chat —
//! `notify`, `request_approval`, `ask`, and read-only `list_tasks` and
//! `recent_events`. It shares the database with `switchboard run` and never
//! starts a platform adapter: it queues what the client asks for (see
//! [`crate::store::OutboxEntry`]) and the running gateway posts it and
//! collects the presses and replies. The chat is the operator's
//! (`MCP_NOTIFY_CHAT`), never the client's choice.

mod exposure;
mod guard;
mod http;
mod own_approval;
mod own_tools;
mod requests;
mod tools;

pub use exposure::{tier_of, Exposure, OwnToolsConfig, ServerUser, Tier};
pub use own_tools::OwnTools;

pub use http::{router, McpHttpConfig, MCP_PATH};
pub use tools::{list as tool_list, Call};

use crate::store::{Store, TaskStatus};
use requests::{Outcome, Requests};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::ChatAddress;
use tokio_util::sync::CancellationToken;

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the MCP session over stdio failed: {0}")]
    Session(String),
    #[error("cannot listen on MCP_LISTEN={addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("the MCP server over HTTP failed: {0}")]
    Http(std::io::Error),
}

/// The server: one per client connection.
#[derive(Clone)]
pub struct Bridge {
    store: Store,
    requests: Option<Arc<Requests>>,
    /// The agent's own tools offered (`MCP_SERVER_TOOLS`), if any.
    own: Option<Arc<OwnTools>>,
}

impl Bridge {
    /// A server posting to `target` (none: the chat tools answer that the
    /// operator has not set `MCP_NOTIFY_CHAT`).
    pub fn new(store: Store, target: Option<ChatAddress>, approval_timeout: Duration) -> Bridge {
        let requests = target.map(|target| {
            Arc::new(Requests {
                store: store.clone(),
                target,
                approval_timeout,
            })
        });
        Bridge {
            store,
            requests,
            own: None,
        }
    }

    /// Offers the agent's own tools too (see [`OwnTools`]).
    pub fn with_own_tools(mut self, own: Option<OwnTools>) -> Bridge {
        self.own = own.map(Arc::new);
        self
    }

    /// Serves one client on stdin/stdout until it disconnects or `shutdown`.
    pub async fn serve_stdio(self, shutdown: CancellationToken) -> Result<(), ServeError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Session(e.to_string()))?;
        let cancel = running.cancellation_token();
        tokio::select! {
            done = running.waiting() => done.map(|_| ()).map_err(|e| ServeError::Session(e.to_string())),
            () = shutdown.cancelled() => {
                cancel.cancel();
                Ok(())
            }
        }
    }

    async fn run(&self, call: Call, client: &str, cancel: &CancellationToken) -> Outcome {
        let chat = || {
            self.requests.as_deref().ok_or_else(|| {
                "the operator has not set MCP_NOTIFY_CHAT, so there is no chat to post to"
                    .to_owned()
            })
        };
        match call {
            Call::Notify { text, request_id } => {
                chat()?
                    .notify(client, &text, request_id.as_deref(), cancel)
                    .await
            }
            Call::RequestApproval {
                action,
                details,
                timeout,
                request_id,
            } => {
                chat()?
                    .request_approval(
                        client,
                        &action,
                        &details,
                        timeout,
                        request_id.as_deref(),
                        cancel,
                    )
                    .await
            }
            Call::Ask {
                question,
                timeout,
                request_id,
            } => {
                chat()?
                    .ask(client, &question, timeout, request_id.as_deref(), cancel)
                    .await
            }
            Call::ListTasks { status, limit } => self.list_tasks(status.as_deref(), limit).await,
            Call::RecentEvents { kind, limit } => self.recent_events(kind.as_deref(), limit).await,
        }
    }

    async fn list_tasks(&self, status: Option<&str>, limit: u32) -> Outcome {
        let status = match status {
            None => None,
            Some(s) => Some(TaskStatus::parse(s).ok_or_else(|| format!("unknown status {s:?}"))?),
        };
        let tasks = self
            .store
            .tasks()
            .recent(status, limit)
            .await
            .map_err(|e| e.to_string())?;
        let tasks: Vec<Value> = tasks
            .iter()
            .map(|t| {
                json!({
                    "id": t.id, "tool": t.tool_name, "status": t.status.as_str(),
                    "stage": t.stage, "detail": t.detail, "percent": t.percent,
                    "platform": t.chat.platform.as_str(),
                    "created_at": t.created_at.to_rfc3339(),
                    "finished_at": t.finished_at.map(|f| f.to_rfc3339()),
                })
            })
            .collect();
        Ok(json!({ "tasks": tasks }))
    }

    async fn recent_events(&self, kind: Option<&str>, limit: u32) -> Outcome {
        // Filtered after reading: at most MAX_LIST × 10 rows are looked at.
        let events = self
            .store
            .audit()
            .recent(limit.saturating_mul(if kind.is_some() { 10 } else { 1 }))
            .await
            .map_err(|e| e.to_string())?;
        let events: Vec<Value> = events
            .iter()
            .filter(|e| kind.is_none_or(|k| e.kind.starts_with(k)))
            .take(limit as usize)
            .map(|e| json!({"id": e.id, "at": e.at.to_rfc3339(), "kind": e.kind, "detail": e.detail}))
            .collect();
        Ok(json!({ "events": events }))
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("switchboard", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Reach the operator's team through their chat: notify, request_approval (a person presses Approve or Deny), ask (a person replies). Use a request_id you can repeat after a restart to get the same request's outcome.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = tools::list();
        if let Some(own) = &self.own {
            listed.extend(own.list());
        }
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let client = context
            .peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .unwrap_or_default();
        if let Some(own) = self.own.as_ref().filter(|o| o.knows(&request.name)) {
            let done = own.call(&request.name, args, &client, &context.ct).await;
            return Ok(match done {
                Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
                Err(problem) => error(problem),
            }
            .into());
        }
        let call = match tools::parse(&request.name, &args) {
            Ok(call) => call,
            Err(problem) => return Ok(error(problem).into()),
        };
        let outcome = self.run(call, &client, &context.ct).await;
        Ok(match outcome {
            Ok(value) => CallToolResult::structured(value),
            Err(problem) => error(problem),
        }
        .into())
    }
}

fn error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}
