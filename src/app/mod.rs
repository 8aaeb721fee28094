//! Assembling and running Switchboard: store, provider, tools, agent, gateway, adapters.

use crate::agent::{Agent, AgentConfig, LiveDelegates, DEFAULT_TOOL_TIMEOUT};
use crate::busy::Busy;
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::gateway::{Gateway, GatewayParts, GatewaySettings, DEFAULT_SYSTEM_PROMPT};
use crate::llm::ProviderError;
use crate::metrics::Metrics;
use crate::skills::SkillLibrary;
use crate::store::{Store, StoreError};
use crate::tasks::TaskManager;
use listeners::{bind_health, start_web, web_state};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{InboundSink, PlatformAdapter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod background;
mod listeners;
mod mcp_tools;
mod parts;
mod reload;
mod watch;
pub use mcp_tools::mcp_own_tools;
pub use parts::{build_provider, build_tools, load_skills};

/// Why Switchboard could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the model provider could not be set up: {0}")]
    Provider(#[from] ProviderError),
    #[error("the workspace directory {path} is unusable: {reason}; set WORKSPACE_DIR to a writable directory")]
    Workspace { path: String, reason: String },
    #[error("{0}")]
    NoPlatforms(&'static str),
    /// A directory of the configuration (`DATA_DIR`) cannot be used.
    #[error(transparent)]
    Path(#[from] crate::dirs::PathProblem),
    #[error("a platform adapter failed to start: {0}")]
    Platform(#[from] crate::wiring::ConnectError),
    #[error("cannot listen on HEALTH_LISTEN={addr}: {reason}; choose a free address or unset it")]
    Health { addr: String, reason: String },
    #[error("cannot listen on WEB_LISTEN={addr}: {reason}; choose a free address or unset it")]
    Web { addr: String, reason: String },
    /// `EXEC_SANDBOX` / `EXEC_NETWORK` ask for what this machine lacks.
    #[error(transparent)]
    Sandbox(#[from] crate::tools::SandboxError),
}

/// A started gateway.
pub struct Running {
    pub store: Store,
    /// Where `/healthz` and `/metrics` are served, when `HEALTH_LISTEN` is set.
    pub health_addr: Option<std::net::SocketAddr>,
    /// Where the web console is served, when `WEB_LISTEN` is set.
    pub web_addr: Option<std::net::SocketAddr>,
    busy: Busy,
    gateway: JoinHandle<()>,
    adapters: Vec<JoinHandle<()>>,
    adapters_done: CancellationToken,
    shutdown: CancellationToken,
    /// The MCP servers, stopped (their process groups gone) before `wait` returns.
    mcp: Arc<crate::mcp::LiveMcp>,
    /// What the operator's files hold now (live reload).
    loaded: Arc<crate::loaded::Loaded>,
    /// This process's claim to be alive, ended when it has stopped.
    _liveness: crate::store::LivenessClaim,
}

impl Running {
    /// Resolves once no input is queued, no turn runs and no background task is left.
    pub async fn idle(&self) {
        self.busy.idle().await;
    }

    /// What is loaded from the operator's files, and the last refusals.
    pub fn loaded(&self) -> &Arc<crate::loaded::Loaded> {
        &self.loaded
    }

    /// Resolves once every adapter's receive loop has ended (e.g. the console at end of input).
    pub async fn adapters_done(&self) {
        self.adapters_done.cancelled().await;
    }

    /// Waits for the gateway and adapters to stop (after `shutdown` is cancelled,
    /// or when every adapter has ended).
    pub async fn wait(self) {
        tokio::select! {
            () = self.adapters_done.cancelled() => self.shutdown.cancel(),
            () = self.shutdown.cancelled() => {}
        }
        let _ = futures::future::join_all(self.adapters).await;
        let _ = self.gateway.await;
        self.mcp.stopped().await;
        self.store.audit().record("gateway.stop", json!({})).await;
    }
}

/// Opens the store, builds the agent and starts the gateway with `adapters`.
pub async fn start(
    config: &Config,
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    shutdown: CancellationToken,
) -> Result<Running, RunError> {
    start_with_clock(config, adapters, shutdown, Arc::new(SystemClock)).await
}

/// [`start`] with approval deadlines measured against `clock` (tests move a
/// [`crate::clock::ManualClock`] forward instead of waiting).
pub async fn start_with_clock(
    config: &Config,
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    shutdown: CancellationToken,
    clock: Arc<dyn Clock>,
) -> Result<Running, RunError> {
    let opened = open_store(config).await?;
    start_opened(config, adapters, opened, shutdown, clock).await
}

/// [`start_with_clock`] on a store already open.
async fn start_opened(
    config: &Config,
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    (store, instance, liveness): Opened,
    shutdown: CancellationToken,
    clock: Arc<dyn Clock>,
) -> Result<Running, RunError> {
    // The binary registered them already (and more, from its environment);
    // an embedding caller or a test gets the config's own.
    crate::secrets::register(config.secret_values());
    let adapters = scrubbed(adapters);
    let provider = build_provider(config)?;
    let busy = Busy::default();
    let (finished_tx, finished_rx) = mpsc::channel(64);
    let tasks = task_manager(config, &store, finished_tx, &shutdown, &busy, &instance);
    log_skipped_entries(config);
    let skills = skill_library(config, &shutdown);
    let workspace = parts::open_workspace(config, &adapters)?;
    let (models, media) = models_and_media(config, &store, &provider, workspace).await;
    let (mut tools, grown) = build_tools(config, &store, &tasks, &skills, &adapters)?;
    grown.watch(shutdown.clone());
    let mcp = start_mcp(config, &store, &mut tools, &grown, &shutdown).await;
    let (agent, delegates) = build_agent(config, provider, tools, &media, &store, &models);
    let agent_provider = Arc::clone(agent.provider());
    let (chats, reloader) = reload::prepare(config, &mcp, &skills, &delegates, &store).await;
    let loaded = Arc::clone(&reloader.loaded);
    let settings = gateway_settings(config, clock, chats);
    let metrics = Arc::new(Metrics::default());
    // Bound now (a taken port stops the start early); served once the
    // gateway exists, since the web console may share this listener.
    let health = bind_health(config).await?;
    let health_addr = health.as_ref().and_then(|l| l.local_addr().ok());
    let parts = GatewayParts {
        media: Arc::clone(&media),
        store: store.clone(),
        agent,
        tasks,
        finished: finished_rx,
        busy: busy.clone(),
        metrics: Arc::clone(&metrics),
        skills,
        grown,
        instance: instance.clone(),
        cheap: cheap_route(config, &models, &agent_provider),
        models,
    };
    let gateway = Gateway::new(settings, parts, adapters.clone(), shutdown.clone());
    let probe = crate::health::Probe {
        store: store.clone(),
        busy: busy.clone(),
        metrics,
        adapters: adapters.clone(),
        mcp: Arc::clone(&mcp),
    };
    let web_addr = serve_listeners(config, &gateway, health, probe, &shutdown, &loaded).await?;
    watch::spawn(reloader, shutdown.clone());
    background::spawn(
        config, &store, instance, web_addr, &adapters, &busy, &shutdown,
    );
    let (sink, inbound) = InboundSink::channel(1024);
    let (handles, adapters_done) = run_adapters(adapters, sink, &shutdown);
    store
        .audit()
        .record("gateway.start", json!({ "platforms": handles.len() }))
        .await;
    let gateway = tokio::spawn(gateway.serve(inbound));
    Ok(Running {
        store,
        health_addr,
        web_addr,
        busy,
        gateway,
        adapters: handles,
        adapters_done,
        shutdown,
        mcp,
        loaded,
        _liveness: liveness,
    })
}

/// The store, this process's id, and its claim to be alive: its queued
/// messages, resumed turns and tasks are its own until the claim ends with it.
/// An open store, this process's id and its claim to be alive.
type Opened = (Store, crate::domain::ProcessId, crate::store::LivenessClaim);

async fn open_store(config: &Config) -> Result<Opened, RunError> {
    // Before the store: the default database lives in DATA_DIR, and an
    // unusable DATA_DIR should be named as such.
    crate::dirs::ensure_writable_dir("DATA_DIR", &config.data_dir)?;
    let store = Store::open(&config.database_url).await?;
    let instance = crate::domain::ProcessId::new();
    let liveness = store.claim_liveness(&instance).await?;
    Ok((store, instance, liveness))
}

/// Every adapter wrapped so nothing posted to a chat carries a known secret.
fn scrubbed(adapters: Vec<Arc<dyn PlatformAdapter>>) -> Vec<Arc<dyn PlatformAdapter>> {
    adapters
        .into_iter()
        .map(crate::gateway::ScrubbedAdapter::wrap)
        .collect()
}

/// The background task manager, its tasks owned by this process (`instance`).
fn task_manager(
    config: &Config,
    store: &Store,
    finished: mpsc::Sender<crate::tasks::TaskFinished>,
    shutdown: &CancellationToken,
    busy: &Busy,
    instance: &crate::domain::ProcessId,
) -> Arc<TaskManager> {
    TaskManager::new(
        store.clone(),
        finished,
        shutdown.clone(),
        busy.clone(),
        config.max_background_tasks,
        config.caps.max_tasks,
        instance.clone(),
    )
}

/// The cheap route (`MODEL_ROUTE_CHEAP`), when one is configured.
fn cheap_route(
    config: &Config,
    models: &Arc<crate::models::Models>,
    fallback: &Arc<dyn crate::llm::Provider>,
) -> Option<Arc<dyn crate::llm::Provider>> {
    config.models.routes.cheap.as_deref().map(|name| {
        Arc::new(crate::models::CheapRoute::new(
            Arc::clone(models),
            name,
            Arc::clone(fallback),
        )) as Arc<dyn crate::llm::Provider>
    })
}

/// The model catalogue (seeded from the configuration) and the media
/// pipeline. Images are kept for a vision route even when the main model is
/// blind; each turn is sent them only when its model sees.
async fn models_and_media(
    config: &Config,
    store: &Store,
    provider: &Arc<dyn crate::llm::Provider>,
    workspace: Arc<crate::tools::Workspace>,
) -> (Arc<crate::models::Models>, Arc<crate::media::Media>) {
    let env_vision = config.media.vision_for(&config.llm.model);
    let mut media_config = config.media.clone();
    if !env_vision && config.models.routes.vision.is_some() {
        media_config.vision = crate::media::VisionSetting::On;
    }
    let models = Arc::new(crate::models::Models::new(
        store.clone(),
        config.models.clone(),
        Arc::clone(provider),
        env_vision,
        config.llm.clone(),
        config.model_keys.clone(),
    ));
    models.seed().await;
    let media = Arc::new(crate::media::Media::new(
        media_config,
        store.clone(),
        config.data_dir.clone(),
        &config.llm.model,
        workspace,
    ));
    (models, media)
}

/// The skills of `SKILLS_DIR` (a bad one skipped with a log line), watched
/// for changes until shutdown.
fn skill_library(config: &Config, shutdown: &CancellationToken) -> Arc<SkillLibrary> {
    let (skills, problems) = SkillLibrary::load(&config.skills_dir, &crate::gateway::COMMANDS);
    for p in &problems {
        tracing::warn!(path = %p.path.display(), problem = %p.problem, "skill skipped");
    }
    let skills = Arc::new(skills);
    skills.watch(shutdown.clone());
    skills
}

/// The agent: the configured prompt and limits, the tools, and a
/// `delegate_to_<role>` tool per sub-agent role (a live set, changed when
/// `SUBAGENTS_FILE` is reloaded).
fn build_agent(
    config: &Config,
    provider: Arc<dyn crate::llm::Provider>,
    mut tools: crate::tools::ToolRegistry,
    media: &crate::media::Media,
    store: &Store,
    models: &Arc<crate::models::Models>,
) -> (Arc<Agent>, Arc<LiveDelegates>) {
    let agent_config = AgentConfig {
        max_tool_rounds: config.max_tool_rounds,
        system_prompt: config
            .system_prompt
            .clone()
            .unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned()),
        data_dir: config.data_dir.clone(),
        model_retries: 2,
        tool_timeout: DEFAULT_TOOL_TIMEOUT,
        intents: config.intents.clone(),
        turn_deadline: config.caps.turn_deadline,
        images: Some(media.images()),
    };
    let delegates = Arc::new(LiveDelegates::new(
        &config.subagents,
        Arc::clone(&provider),
        tools.clone(),
        agent_config.clone(),
        store.clone(),
        Some(Arc::clone(models)),
    ));
    tools.register_dynamic(Arc::clone(&delegates) as Arc<dyn crate::tools::DynamicTools>);
    (
        Arc::new(Agent::new(provider, Arc::new(tools), agent_config)),
        delegates,
    )
}

/// Serves the web console (`WEB_LISTEN`) and the health endpoint on the
/// listener bound earlier — one listener for both when they are the same
/// address; returns the console's address.
async fn serve_listeners(
    config: &Config,
    gateway: &Gateway,
    health: Option<tokio::net::TcpListener>,
    probe: crate::health::Probe,
    shutdown: &CancellationToken,
    loaded: &Arc<crate::loaded::Loaded>,
) -> Result<Option<std::net::SocketAddr>, RunError> {
    let health_addr = health.as_ref().and_then(|l| l.local_addr().ok());
    let shared = config.web.listen.is_some() && config.web.listen == config.health_listen;
    let web_addr = if shared {
        health_addr
    } else {
        start_web(config, gateway, shutdown, loaded).await?
    };
    if let Some(listener) = health {
        let console = shared.then(|| crate::web::router(web_state(config, gateway, loaded)));
        tokio::spawn(crate::health::serve(
            listener,
            probe,
            console,
            shutdown.clone(),
        ));
        tracing::info!(addr = ?health_addr, console = shared, "health and metrics endpoint listening");
    }
    Ok(web_addr)
}

/// Reports the entries of the operator's files that were skipped (each also
/// shown by `switchboard doctor`).
fn log_skipped_entries(config: &Config) {
    for p in &config.http_tool_problems {
        tracing::warn!(file = %p.file.display(), tool = %p.tool, problem = %p.problem, "HTTP tool skipped");
    }
    for p in &config.script_tool_problems {
        tracing::warn!(manifest = %p.manifest.display(), problem = %p.problem, "script tool skipped");
    }
    for p in &config.chat_problems {
        tracing::warn!(chat = %p.target, problem = %p.problem, "CHATS_FILE entry");
    }
    for p in &config.mcp_problems {
        tracing::warn!(server = %p.server, problem = %p.problem, "MCP server entry");
    }
    for problem in &config.role_problems {
        tracing::warn!(%problem, "SUBAGENTS_FILE entry");
    }
}

/// Starts the MCP servers (concurrently; a slow one holds the start up for
/// the initialize timeout at most, and is then down and retried, not
/// fatal) and adds theirs and the grown tools to `tools`.
async fn start_mcp(
    config: &Config,
    store: &Store,
    tools: &mut crate::tools::ToolRegistry,
    grown: &Arc<crate::tools::GrownTools>,
    shutdown: &CancellationToken,
) -> Arc<crate::mcp::LiveMcp> {
    let ctx = crate::mcp::McpContext {
        sandbox: config.exec_sandbox.clone(),
        data_dir: config.data_dir.clone(),
        store: Some(store.clone()),
    };
    let mcp = crate::mcp::LiveMcp::start(&config.mcp_servers, ctx, shutdown).await;
    // Logs the names refused now; the registry asks again each time.
    let _ = mcp.clients().tools(&tools.names());
    let mcp = Arc::new(mcp);
    tools.register_dynamic(Arc::clone(&mcp) as Arc<dyn crate::tools::DynamicTools>);
    tools.register_dynamic(Arc::clone(grown) as Arc<dyn crate::tools::DynamicTools>);
    mcp
}

/// The gateway's slice of the configuration.
fn gateway_settings(
    config: &Config,
    clock: Arc<dyn Clock>,
    chats: Arc<crate::loaded::Live<crate::chats::ChatBindings>>,
) -> GatewaySettings {
    GatewaySettings {
        access_policy: config.access_policy,
        allowed_users: config.allowed_users.clone(),
        user_messages_per_minute: config.user_messages_per_minute,
        approval_presses_per_minute: config.caps.approval_presses_per_minute,
        approval_timeout: config.approval_timeout,
        pairing_ttl: Duration::from_secs(3600),
        memory: config.memory.clone(),
        clock,
        spool_dir: config.data_dir.join("spool"),
        verbosity: config.chat_verbosity,
        queue_mode: config.queue_mode,
        chats,
        tool_builders: config.tool_builders,
        identity_user_edits: config.identity_user_edits,
    }
}

/// Runs each adapter on a task of its own, feeding `sink`; the token is
/// cancelled once every adapter has stopped.
fn run_adapters(
    adapters: Vec<Arc<dyn PlatformAdapter>>,
    sink: InboundSink,
    shutdown: &CancellationToken,
) -> (Vec<JoinHandle<()>>, CancellationToken) {
    let adapters_done = CancellationToken::new();
    let remaining = Arc::new(AtomicUsize::new(adapters.len()));
    let mut handles = Vec::with_capacity(adapters.len());
    for adapter in adapters {
        let sink = sink.clone();
        let token = shutdown.clone();
        let (remaining, done) = (Arc::clone(&remaining), adapters_done.clone());
        handles.push(tokio::spawn(async move {
            let platform = adapter.platform();
            match adapter.run(sink, token).await {
                Ok(()) => tracing::info!(%platform, "adapter stopped"),
                Err(e) => tracing::error!(%platform, error = %e, "adapter failed"),
            }
            if remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
                done.cancel();
            }
        }));
    }
    (handles, adapters_done)
}

/// `switchboard run`: every configured platform adapter, until `shutdown`.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), RunError> {
    if config.platforms.is_empty() {
        return Err(RunError::NoPlatforms(crate::wiring::PLATFORM_HELP));
    }
    // The adapters keep their state in DATA_DIR too.
    crate::dirs::ensure_writable_dir("DATA_DIR", &config.data_dir)?;
    // Compiled while the platforms connect, not before the first answer.
    std::thread::spawn(crate::agent::IntentRules::warm_up);
    // The database is opened (and migrated) while the platforms connect.
    let (adapters, opened) = tokio::try_join!(
        async { Ok::<_, RunError>(config.platforms.connect().await?) },
        open_store(&config),
    )?;
    let running = start_opened(&config, adapters, opened, shutdown, Arc::new(SystemClock)).await?;
    running.wait().await;
    Ok(())
}
