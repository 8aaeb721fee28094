//! Command-line interface: `chat`, `run`, `migrate`, `pair`, `approvals`,
//! `events`; `doctor`, `tasks`, `memory` and `model` live in the files beside this one.

pub(crate) mod approvals;
pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod doctor;
pub(crate) mod global;
pub(crate) mod logs;
pub(crate) mod memory;
pub(crate) mod model;
pub(crate) mod pair;
pub(crate) mod tasks;

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
    /// Show the configured model, endpoint and context window (no network call).
    Model,
}

#[derive(Debug, Subcommand)]
enum ApprovalsAction {
    /// List every rule.
    List,
    /// List the approval cards still waiting for a decision, in every chat.
    Pending,
    /// Revoke a rule by id (or its first 6+ characters).
    Revoke { id: String },
}

impl Args {
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
    init_tracing(
        config.log_format,
        quiet,
        crate::cli::logs::target(quiet, &config.data_dir),
    );
    match &sealed.problem {
        None => {
            tracing::debug!(removed = ?sealed.removed, "secret variables removed from the environment; process not dumpable")
        }
        Some(problem) => {
            tracing::warn!(%problem, removed = ?sealed.removed, "secret variables removed from the environment, but the process could not be made non-dumpable: programs it runs may read its start environment")
        }
    }
    match args.command {
        Command::Chat => crate::cli::chat::run(config).await,
        Command::Run => {
            let shutdown = shutdown_on_signal();
            match switchboard::run(config, shutdown).await {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(switchboard::RunError::NoPlatforms(help)) => {
                    eprintln!("{help}");
                    Ok(ExitCode::from(2))
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Migrate => {
            let store = Store::connect(&config.database_url).await?;
            store.migrate().await?;
            println!(
                "Database at {} is up to date.",
                store::redact_url(&config.database_url)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor => crate::cli::doctor::run(config).await,
        Command::Pair { action } => crate::cli::pair::run(&config.database_url, action).await,
        Command::Approvals {
            action: ApprovalsAction::Pending,
        } => crate::cli::approvals::pending(&config.database_url).await,
        Command::Approvals { action } => {
            let store = Store::open(&config.database_url).await?;
            match action {
                ApprovalsAction::List => {
                    let rules = store.all_rules().await?;
                    if rules.is_empty() {
                        println!("No \"always allow\" rules.");
                    }
                    for r in rules {
                        println!(
                            "{}  {} user {}  {}  {}",
                            &r.id[..8.min(r.id.len())],
                            r.platform,
                            r.user,
                            r.tool_name,
                            switchboard::approvals::describe_rule(&r.pattern)
                        );
                    }
                }
                ApprovalsAction::Pending => {}
                ApprovalsAction::Revoke { id } => {
                    if !store.revoke_any_rule(id.trim()).await? {
                        anyhow::bail!(
                            "no rule matches {id} (give at least 6 characters of a unique id)"
                        );
                    }
                    store
                        .record_event("approval.rule_revoked", serde_json::json!({ "id": id }))
                        .await;
                    println!("Revoked rule {id}.");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Events { limit } => {
            let store = Store::open(&config.database_url).await?;
            for e in store.events(limit).await? {
                println!(
                    "{}  {:<24} {}",
                    e.at.format("%Y-%m-%d %H:%M:%S"),
                    e.kind,
                    e.detail
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tasks { limit, status } => {
            crate::cli::tasks::run(&config.database_url, limit, status.as_deref()).await
        }
        Command::Memory { action } => crate::cli::memory::run(&config.database_url, action).await,
        Command::Model => Ok(crate::cli::model::run(&config)),
    }
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
/// warnings only so the conversation stays readable.
fn init_tracing(format: LogFormat, quiet: bool, target: crate::cli::logs::LogTarget) {
    use tracing_subscriber::EnvFilter;
    // serenity's own info lines are internals in debug formatting (`ShardInfo { id: ShardId(0), .. }`).
    let default = if quiet {
        "warn"
    } else {
        "info,sqlx=warn,serenity=warn"
    };
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    for directive in SECRET_SAFE {
        if let Ok(d) = directive.parse() {
            filter = filter.add_directive(d);
        }
    }
    // Every line is scrubbed of the known secrets, whatever logged it.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(target.ansi)
        .with_writer(switchboard::secrets::ScrubbingWriter::new(target.writer));
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Pretty => builder.try_init(),
    };
}
