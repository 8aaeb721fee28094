//! One MCP server's connection, kept in its own task: the child process
//! (sandboxed, see `launch`; own process group, stderr into our log) or the
//! Streamable HTTP session, `initialize` within 30 s, the tool list (each
//! tool's read-only annotation frozen at first sight, see `frozen`),
//! restarts with backoff when it dies, and a clean stop on shutdown.

use super::config::{McpServerDef, McpTransport};
use super::counts::CallCounts;
use super::error::ConnectError;
use super::frozen::Frozen;
use super::launch::McpContext;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool as RemoteTool};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Child;
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

/// Longest wait for `initialize` (and the first tool list).
pub const INIT_TIMEOUT: Duration = Duration::from_secs(30);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// How long a stopped server may take to exit before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Longest stderr line logged (a longer one is skipped).
const MAX_STDERR_LINE: usize = 2000;
/// Stderr lines logged per second and server; the rest are counted.
const STDERR_LINES_PER_SEC: u32 = 50;

/// Whether the server can take calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The first connection attempt has not finished.
    Starting,
    Up,
    Down,
}

/// What is known about the server now.
#[derive(Clone)]
pub struct ServerState {
    pub status: Status,
    pub peer: Option<Peer<RoleClient>>,
    pub protocol_version: Option<String>,
    pub tools: Vec<RemoteTool>,
    pub last_error: Option<String>,
    /// Connections made so far (1 after the first start, 2 after a restart...).
    pub connections: u64,
    /// The task has ended (shutdown) and the process is gone.
    pub stopped: bool,
}

/// A running server's handle; its task keeps it connected until shutdown.
pub struct McpServer {
    pub def: McpServerDef,
    state: watch::Sender<ServerState>,
    /// How its calls ended (for `/metrics`).
    pub calls: CallCounts,
    ctx: Arc<McpContext>,
    /// Each tool's read-only annotation as first seen.
    frozen: Arc<Frozen>,
}

/// Notifies the supervisor when the server's tool list changes.
struct Handler {
    changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
        )
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The process of a stdio server.
    child: Option<Child>,
    /// The sandbox's hold on the process's private temp dir.
    _confined: Option<Box<dyn std::any::Any + Send>>,
}

impl McpServer {
    /// Starts the server's task; it runs until `shutdown`.
    pub fn spawn(
        def: McpServerDef,
        ctx: Arc<McpContext>,
        shutdown: CancellationToken,
    ) -> Arc<McpServer> {
        let (state, _) = watch::channel(ServerState {
            status: Status::Starting,
            peer: None,
            protocol_version: None,
            tools: Vec::new(),
            last_error: None,
            connections: 0,
            stopped: false,
        });
        let frozen = Arc::new(Frozen::new(def.name.clone(), ctx.store.clone()));
        let server = Arc::new(McpServer {
            def,
            state,
            calls: CallCounts::default(),
            ctx,
            frozen,
        });
        tokio::spawn(Arc::clone(&server).supervise(shutdown));
        server
    }

    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The read-only annotation a tool's approval is decided by: `Some(true)`
    /// only when it said so at first sight and still does (see `frozen`).
    pub fn trusted_read_only(&self, tool: &str, now: Option<bool>) -> Option<bool> {
        self.frozen.trusted(tool, now)
    }

    /// The state now.
    pub fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    /// Changes of the state.
    pub fn watch(&self) -> watch::Receiver<ServerState> {
        self.state.subscribe()
    }

    /// Waits until the first connection attempt has finished (up or down).
    pub async fn settled(&self) {
        let mut rx = self.watch();
        let _ = rx.wait_for(|s| s.status != Status::Starting).await;
    }

    /// Waits until the task has ended after shutdown (the process is gone).
    pub async fn stopped(&self) {
        let mut rx = self.watch();
        let _ = rx.wait_for(|s| s.stopped).await;
    }

    fn down(&self, error: String) {
        tracing::warn!(server = %self.def.name, error = %error, "MCP server down");
        self.state.send_modify(|s| {
            s.status = Status::Down;
            s.peer = None;
            s.last_error = Some(error);
        });
    }

    async fn supervise(self: Arc<Self>, shutdown: CancellationToken) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let attempt = tokio::select! {
                _ = shutdown.cancelled() => break,
                attempt = self.connect() => attempt,
            };
            match attempt {
                Ok(conn) => {
                    backoff = FIRST_BACKOFF;
                    match self.serve(conn, &shutdown).await {
                        Some(reason) => self.down(reason),
                        None => break,
                    }
                }
                Err(e) => self.down(e.to_string()),
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        self.state.send_modify(|s| {
            s.status = Status::Down;
            s.peer = None;
            s.stopped = true;
        });
        tracing::info!(server = %self.def.name, "MCP server stopped");
    }

    /// Starts the process (or opens the HTTP session) and initializes.
    async fn connect(&self) -> Result<Connection, ConnectError> {
        match &self.def.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                path,
            } => {
                let launch = super::launch::command(
                    &self.def,
                    &self.ctx,
                    command,
                    args,
                    env,
                    cwd.as_deref(),
                    path.as_deref(),
                )
                .map_err(|source| ConnectError::Sandbox {
                    command: command.clone(),
                    source,
                })?;
                let confined = launch.confined;
                let mut cmd = launch.command;
                cmd.stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .process_group(0)
                    .kill_on_drop(true);
                let mut child = cmd.spawn().map_err(|source| ConnectError::Spawn {
                    command: command.clone(),
                    source,
                })?;
                if let Some(stderr) = child.stderr.take() {
                    tokio::spawn(log_stderr(self.def.name.clone(), stderr));
                }
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    stop_child(&mut child).await;
                    return Err(ConnectError::Initialize("no pipes to the process".into()));
                };
                match self.initialize((stdout, stdin)).await {
                    Ok(service) => Ok(Connection {
                        service,
                        child: Some(child),
                        _confined: Some(confined),
                    }),
                    Err(e) => {
                        stop_child(&mut child).await;
                        Err(e)
                    }
                }
            }
            McpTransport::Http { url, headers } => {
                let transport = super::http::transport(url, headers)?;
                let service = self.initialize(transport).await?;
                Ok(Connection {
                    service,
                    child: None,
                    _confined: None,
                })
            }
        }
    }

    /// `initialize` and the first `tools/list`, within [`INIT_TIMEOUT`].
    async fn initialize<T, E, A>(
        &self,
        transport: T,
    ) -> Result<RunningService<RoleClient, Handler>, ConnectError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let changed = Arc::new(Notify::new());
        let handler = Handler {
            changed: Arc::clone(&changed),
        };
        let init = async {
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| ConnectError::Initialize(e.to_string()))?;
            let tools = service
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| ConnectError::ListTools(e.to_string()))?;
            Ok::<_, ConnectError>((service, tools))
        };
        let (service, tools) = tokio::time::timeout(INIT_TIMEOUT, init)
            .await
            .map_err(|_| ConnectError::InitTimeout(INIT_TIMEOUT))??;
        let peer = service.peer().clone();
        let protocol = peer
            .peer_info()
            .map(|info| info.protocol_version.to_string());
        tracing::info!(
            server = %self.def.name,
            protocol = protocol.as_deref().unwrap_or("?"),
            tools = tools.len(),
            "MCP server up"
        );
        warn_if_too_many(&self.def.name, tools.len());
        self.frozen.see(&tools).await;
        self.state.send_modify(|s| {
            s.status = Status::Up;
            s.peer = Some(peer.clone());
            s.protocol_version = protocol;
            s.tools = tools;
            s.connections += 1;
        });
        tokio::spawn(relist(
            peer,
            changed,
            self.state.clone(),
            self.def.name.clone(),
            Arc::clone(&self.frozen),
        ));
        Ok(service)
    }

    /// Runs a connection until the process dies or the session ends (the
    /// reason), or until shutdown (`None`).
    async fn serve(&self, conn: Connection, shutdown: &CancellationToken) -> Option<String> {
        let Connection {
            service,
            mut child,
            _confined,
        } = conn;
        let stop = service.cancellation_token();
        let changed = Arc::clone(&service.service().changed);
        let ended = service.waiting();
        tokio::pin!(ended);
        let exited = async {
            match child.as_mut() {
                Some(c) => c.wait().await,
                None => std::future::pending().await,
            }
        };
        let (reason, closed) = tokio::select! {
            _ = shutdown.cancelled() => (None, false),
            status = exited => (Some(match status {
                Ok(s) => format!("the process exited ({s})"),
                Err(e) => format!("the process is gone: {e}"),
            }), false),
            _ = &mut ended => (Some("the connection closed".to_owned()), true),
        };
        // Pending calls fail as soon as the session ends.
        stop.cancel();
        if !closed {
            let _ = ended.await;
        }
        // The re-listing task sees the session closed and ends.
        changed.notify_one();
        if let Some(child) = child.as_mut() {
            stop_child(child).await;
        }
        reason
    }
}

/// Re-lists the tools whenever the server says they changed; the agent is
/// offered the new list from its next model call.
async fn relist(
    peer: Peer<RoleClient>,
    changed: Arc<Notify>,
    state: watch::Sender<ServerState>,
    name: String,
    frozen: Arc<Frozen>,
) {
    loop {
        changed.notified().await;
        if peer.is_transport_closed() {
            return;
        }
        match peer.list_all_tools().await {
            Ok(tools) => {
                tracing::info!(server = %name, tools = tools.len(), "MCP server's tool list changed");
                warn_if_too_many(&name, tools.len());
                frozen.see(&tools).await;
                state.send_modify(|s| s.tools = tools);
            }
            Err(e) => {
                tracing::warn!(server = %name, error = %e, "re-listing MCP tools failed");
                return;
            }
        }
    }
}

fn warn_if_too_many(server: &str, listed: usize) {
    if listed > super::MAX_TOOLS_PER_SERVER {
        tracing::warn!(
            server,
            listed,
            "MCP server lists more tools than are offered; only the first {} are",
            super::MAX_TOOLS_PER_SERVER
        );
    }
}

/// SIGTERM to the process group, then SIGKILL after a grace period.
async fn stop_child(child: &mut Child) {
    let Some(pid) = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32))
    else {
        let _ = child.wait().await;
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
    if tokio::time::timeout(STOP_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = child.wait().await;
    } else {
        // Whatever the server left running in its group goes too.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Each stderr line into our log, tagged with the server's name: at most
/// [`STDERR_LINES_PER_SEC`] a second (the rest counted and the count logged),
/// an overlong line skipped with a note. Reading never stops, so a chatty
/// server never blocks on a full pipe.
async fn log_stderr(name: String, stderr: tokio::process::ChildStderr) {
    use futures::StreamExt;
    use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
    let mut lines = FramedRead::new(stderr, LinesCodec::new_with_max_length(MAX_STDERR_LINE));
    let mut window = tokio::time::Instant::now();
    let (mut logged, mut dropped) = (0u32, 0u64);
    while let Some(line) = lines.next().await {
        if window.elapsed() >= Duration::from_secs(1) {
            if dropped > 0 {
                tracing::warn!(server = %name, "mcp stderr: {dropped} lines not logged (too many)");
            }
            window = tokio::time::Instant::now();
            (logged, dropped) = (0, 0);
        }
        if logged >= STDERR_LINES_PER_SEC {
            dropped += 1;
            continue;
        }
        match line {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => {
                logged += 1;
                tracing::info!(server = %name, "mcp stderr: {}", line.trim_end());
            }
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                logged += 1;
                tracing::info!(server = %name, "mcp stderr: (a line over {MAX_STDERR_LINE} bytes, skipped)");
            }
            Err(LinesCodecError::Io(_)) => break,
        }
    }
    if dropped > 0 {
        tracing::warn!(server = %name, "mcp stderr: {dropped} lines not logged (too many)");
    }
}
