//! Command-line interface: `chat`, `run`, `migrate`, `pair`, `approvals`,
//! `events`; `doctor`, `tasks`, `memory`, `identity` and `model` live in the files beside this one.

pub(crate) mod approvals;
pub(crate) mod catalogue;
pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod doctor;
mod doctor_live;
pub(crate) mod extract;
pub(crate) mod global;
pub(crate) mod identity;
pub(crate) mod init;
pub(crate) mod logs;
pub(crate) mod memory;
pub(crate) mod model;
pub(crate) mod pair;
pub(crate) mod tasks;
pub(crate) mod usage;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use switchboard::config::{Config, LogFormat};
use switchboard::store::{self, Store};
use tokio_util::sync::CancellationToken;

/// Switchboard: a self-hosted gateway between an LLM agent and chat platforms.
#[derive(Debug, Parser)]
#[command(version, about)]
pub struct Args {
    #[command(flatten)]
    pub global: crate::cli::global::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Chat with the agent in this terminal (works with piped stdin too).
    Chat,
    /// Run the gateway with every configured platform (Telegram, Discord).
    Run,
    /// Set up: probe the model endpoint, check the bot tokens, write .env.
    Init(crate::cli::init::InitArgs),
    /// Apply database migrations.
    Migrate,
    /// Check the configuration, the database and the model endpoint.
    Doctor,
    /// Pairing requests from unknown users, and who is admitted.
    Pair {
        #[command(subcommand)]
        action: crate::cli::pair::PairAction,
    },
    /// List or revoke "always allow" rules, or list the cards still pending.
    Approvals {
        #[command(subcommand)]
        action: ApprovalsAction,
    },
    /// Show the audit log of system events (newest first).
    Events {
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// List recent background tasks of every chat (newest first; times in UTC).
    Tasks {
        /// Tasks shown at most.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Only tasks in this status: queued, running, succeeded, failed, cancelled, interrupted.
        #[arg(long)]
        status: Option<String>,
    },
    /// List or forget one user's long-term memories.
    Memory {
        #[command(subcommand)]
        action: crate::cli::memory::MemoryAction,
    },
    /// Show, edit, lock (snapshot) or restore the agent's identity.
    Identity {
        #[command(subcommand)]
        action: crate::cli::identity::IdentityAction,
    },
    /// Show the configured model (no network call), or manage the model
    /// catalogue: list, add, remove, default, fallback.
    Model {
        #[command(subcommand)]
        action: Option<crate::cli::catalogue::ModelAction>,
    },
    /// Tokens, cache hits and estimated cost per model.
    Usage {
        /// Days back, today included.
        #[arg(long, default_value_t = 1)]
        days: u32,
        /// One user only: platform:id (e.g. telegram:123456).
        #[arg(long)]
        user: Option<String>,
    },
    /// Serve MCP over stdio (or Streamable HTTP on MCP_LISTEN, with the
    /// bearer token MCP_TOKEN): external agents notify, ask and request
    /// approvals in the chat MCP_NOTIFY_CHAT names (through a running `run`).
    Mcp,
    /// About the configuration itself (needs none).
    Config {
        #[command(subcommand)]
        action: crate::cli::config::ConfigAction,
    },
    /// The document reader the gateway starts for each PDF (internal).
    #[command(name = "extract-document", hide = true)]
    ExtractDocument(crate::cli::extract::ExtractArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum ApprovalsAction {
    /// List every rule.
    List,
    /// List the approval cards still waiting for a decision, in every chat.
    Pending,
    /// Revoke a rule by id (or its first 6+ characters).
    Revoke { id: String },
}

impl Args {
    /// The wizard's options when the command is `init` (it runs before, and
    /// without, a configuration).
    pub fn take_init(&mut self) -> Option<crate::cli::init::InitArgs> {
        if !matches!(self.command, Command::Init(_)) {
            return None;
        }
        match std::mem::replace(&mut self.command, Command::Chat) {
            Command::Init(init) => Some(init),
            _ => None,
        }
    }

    /// The document reader's options when the command is
    /// `extract-document` (it runs before, and without, a configuration).
    pub fn take_extract(&mut self) -> Option<crate::cli::extract::ExtractArgs> {
        if !matches!(self.command, Command::ExtractDocument(_)) {
            return None;
        }
        match std::mem::replace(&mut self.command, Command::Chat) {
            Command::ExtractDocument(args) => Some(args),
            _ => None,
        }
    }

    /// Whether the command is `config reference`, which prints the
    /// configuration reference and reads no configuration.
    pub fn is_config_reference(&self) -> bool {
        matches!(
            self.command,
            Command::Config {
                action: crate::cli::config::ConfigAction::Reference
            }
        )
    }

    /// Whether the command talks to the model and so needs `LLM_BASE_URL`
    /// and `LLM_MODEL`; the admin commands only read the database.
    pub fn needs_model(&self) -> bool {
        matches!(self.command, Command::Chat | Command::Run | Command::Doctor)
    }
}

/// Runs a command with `config`, read (and its secrets sealed away, see
/// [`switchboard::secrets::seal_process`]) before the runtime started.
pub async fn dispatch(
    args: Args,
    config: Config,
    sealed: switchboard::secrets::SealReport,
) -> anyhow::Result<ExitCode> {
    let quiet = matches!(args.command, Command::Chat);
    // Only the commands that run turns export traces.
    let traced = matches!(args.command, Command::Chat | Command::Run);
    let telemetry = init_tracing(
        config.log_format,
        quiet,
        crate::cli::logs::target(quiet, &config.data_dir),
        traced.then_some(&config.otel),
    )?;
    let code = run_command(args.command, config, sealed).await;
    // Spans still batched are exported before the process ends.
    if let Some(telemetry) = telemetry {
        telemetry.shutdown().await;
    }
    code
}

async fn run_command(
    command: Command,
    config: Config,
    sealed: switchboard::secrets::SealReport,
) -> anyhow::Result<ExitCode> {
    log_seal(&sealed);
    match command {
        // Dispatched by `main` before any configuration is read.
        Command::Init(init) => crate::cli::init::run(init).await,
        Command::Chat => crate::cli::chat::run(config).await,
        Command::Run => run_gateway(config).await,
        Command::Migrate => migrate(&config).await,
        Command::Doctor => crate::cli::doctor::run(config).await,
        Command::Pair { action } => crate::cli::pair::run(&config.database_url, action).await,
        Command::Approvals {
            action: ApprovalsAction::Pending,
        } => crate::cli::approvals::pending(&config.database_url).await,
        Command::Approvals { action } => {
            crate::cli::approvals::rules(&config.database_url, action).await
        }
        Command::Events { limit } => events(&config, limit).await,
        Command::Tasks { limit, status } => {
            crate::cli::tasks::run(&config.database_url, limit, status.as_deref()).await
        }
        Command::Memory { action } => {
            let embeddings = config.memory.embeddings.as_ref();
            crate::cli::memory::run(&config.database_url, embeddings, action).await
        }
        Command::Identity { action } => {
            crate::cli::identity::run(&config.database_url, action).await
        }
        Command::Model { action: None } => Ok(crate::cli::model::run(&config)),
        Command::Model {
            action: Some(action),
        } => crate::cli::catalogue::run(&config.database_url, action).await,
        Command::Usage { days, user } => {
            crate::cli::usage::run(&config.database_url, days, user.as_deref()).await
        }
        Command::Config { action } => Ok(crate::cli::config::run(action)),
        // Dispatched by `main` before any configuration is read.
        Command::ExtractDocument(args) => Ok(crate::cli::extract::run(&args)),
        Command::Mcp => serve_mcp(config).await,
    }
}

/// Says which secret variables left the environment, and whether the process
/// could be made non-dumpable.
fn log_seal(sealed: &switchboard::secrets::SealReport) {
    match &sealed.problem {
        None => {
            tracing::debug!(removed = ?sealed.removed, "secret variables removed from the environment; process not dumpable")
        }
        Some(problem) => {
            tracing::warn!(%problem, removed = ?sealed.removed, "secret variables removed from the environment, but the process could not be made non-dumpable: programs it runs may read its start environment")
        }
    }
}

/// `switchboard run`: the gateway until a signal; exit 2 with help when no
/// platform is configured.
async fn run_gateway(config: Config) -> anyhow::Result<ExitCode> {
    match switchboard::run(config, shutdown_on_signal()).await {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(switchboard::RunError::NoPlatforms(help)) => {
            eprintln!("{help}");
            Ok(ExitCode::from(2))
        }
        Err(e) => Err(e.into()),
    }
}

async fn migrate(config: &Config) -> anyhow::Result<ExitCode> {
    let store = Store::connect(&config.database_url).await?;
    store.migrate().await?;
    println!(
        "Database at {} is up to date.",
        store::redact_url(&config.database_url)
    );
    Ok(ExitCode::SUCCESS)
}

async fn events(config: &Config, limit: u32) -> anyhow::Result<ExitCode> {
    let store = Store::open(&config.database_url).await?;
    for e in store.audit().recent(limit).await? {
        println!(
            "{}  {:<24} {}",
            e.at.format("%Y-%m-%d %H:%M:%S"),
            e.kind,
            e.detail
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `switchboard mcp`: the MCP server for other agents, over HTTP when
/// configured, else stdio.
async fn serve_mcp(config: Config) -> anyhow::Result<ExitCode> {
    let store = Store::open(&config.database_url).await?;
    if config.mcp_notify_chat.is_none() {
        tracing::warn!("MCP_NOTIFY_CHAT is not set: notify, ask and request_approval will say so to the client");
    }
    let shutdown = shutdown_on_signal();
    let own = switchboard::mcp_own_tools(&config, &store, &shutdown)?;
    match (&own, config.mcp_own_tools.user) {
        (Some(_), Some(user)) => tracing::info!(
            tier = config.mcp_own_tools.exposure.as_str(),
            user = %user.describe(),
            "offering the agent's own tools (MCP_SERVER_TOOLS) as MCP_SERVER_USER"
        ),
        _ => tracing::info!(
            "the agent's own tools are not offered (MCP_SERVER_TOOLS=none or no MCP_SERVER_USER)"
        ),
    }
    let bridge = switchboard::mcp::serve::Bridge::new(
        store.clone(),
        config.mcp_notify_chat,
        config.approval_timeout,
    )
    .with_own_tools(own);
    match &config.mcp_http {
        Some(http) => bridge.serve_http(http, shutdown).await?,
        None => bridge.serve_stdio(shutdown).await?,
    }
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// Cancelled on Ctrl-C or SIGTERM.
pub(crate) fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {}
            () = term => {}
        }
        t.cancel();
    });
    token
}

/// Crates whose trace output carries secrets (tungstenite logs whole gateway
/// frames, Identify with the Discord token; HTTP clients log URLs, and Telegram's
/// URLs contain the bot token): capped at `info` whatever `RUST_LOG` asks.
const SECRET_SAFE: &[&str] = &[
    "tungstenite=info",
    "tokio_tungstenite=info",
    "reqwest=info",
    "hyper=info",
    "hyper_util=info",
    "h2=info",
];

/// Logs go to `target` (see [`crate::cli::logs::target`]); `chat` defaults to
/// warnings only so the conversation stays readable. With `otel` configured,
/// the spans of turns are exported too (see [`switchboard::telemetry`]); the
/// handle returned flushes them at the end.
fn init_tracing(
    format: LogFormat,
    quiet: bool,
    target: crate::cli::logs::LogTarget,
    otel: Option<&switchboard::config::OtelConfig>,
) -> Result<Option<switchboard::telemetry::Telemetry>, switchboard::telemetry::TelemetryError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    // serenity's own info lines are internals in debug formatting (`ShardInfo { id: ShardId(0), .. }`).
    let default = if quiet {
        "warn"
    } else {
        "info,sqlx=warn,serenity=warn,rmcp=warn"
    };
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // The spans made for export are not log lines.
    let otel_off = format!("{}=off", switchboard::telemetry::TARGET);
    for directive in SECRET_SAFE.iter().copied().chain([otel_off.as_str()]) {
        if let Ok(d) = directive.parse() {
            filter = filter.add_directive(d);
        }
    }
    // Every line is scrubbed of the known secrets, whatever logged it.
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(target.ansi)
        .with_writer(switchboard::secrets::ScrubbingWriter::new(target.writer));
    let fmt = match format {
        LogFormat::Json => fmt.json().with_filter(filter).boxed(),
        LogFormat::Pretty => fmt.with_filter(filter).boxed(),
    };
    let registry = tracing_subscriber::registry().with(fmt);
    let exported = match otel {
        Some(config) => switchboard::telemetry::layer(config)?,
        None => None,
    };
    let (layer, telemetry) = exported.unzip();
    let _ = registry.with(layer).try_init();
    Ok(telemetry)
}
