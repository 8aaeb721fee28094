//! Options every subcommand takes (`--env-file`, `--data-dir`), and the part of
//! each subcommand's `--help` that points to the environment variables.

use clap::{CommandFactory, FromArgMatches};
use std::path::{Path, PathBuf};
use switchboard::config::{Config, ConfigError};

/// Where the configuration and the state come from.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// Read variables from FILE instead of ./.env (variables already set in the
    /// environment win, as with .env).
    #[arg(long, global = true, value_name = "FILE")]
    env_file: Option<PathBuf>,
    /// Keep state in DIR: the SQLite database, the workspace, stored results,
    /// traces, adapter state (sets DATA_DIR; DATABASE_URL and WORKSPACE_DIR
    /// follow it unless they are set).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

/// Why the options could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum GlobalError {
    #[error("--env-file {path}: {problem}")]
    EnvFile { path: String, problem: String },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl GlobalArgs {
    /// Loads the env file (`--env-file`, else `./.env` if present), applies
    /// `--data-dir`, and reads the configuration. Runs before any thread starts:
    /// it changes the process environment.
    /// The configuration, read from `--env-file` (else `./.env`) and the
    /// environment. Commands that never call the model (`needs_model` false)
    /// run without `LLM_BASE_URL`/`LLM_MODEL` (see [`crate::cli::config`]).
    pub fn load_config(&self, needs_model: bool) -> Result<Config, GlobalError> {
        if let Some(dir) = &self.data_dir {
            // The flag beats DATA_DIR from the environment and from the file.
            std::env::set_var("DATA_DIR", dir);
        }
        if let Some(path) = &self.env_file {
            load_env_file(path)?;
        }
        let mut config = crate::cli::config::load(needs_model, self.env_file.is_none())?;
        if let Some(path) = &self.env_file {
            // Commands must not read the file the secrets came from.
            config.keep_from_commands(path);
        }
        Ok(config)
    }
}

fn load_env_file(path: &Path) -> Result<(), GlobalError> {
    let problem = |problem: String| GlobalError::EnvFile {
        path: path.display().to_string(),
        problem,
    };
    if !path.is_file() {
        return Err(problem(
            "no such file (give the path of a file like .env.example)".into(),
        ));
    }
    dotenvy::from_path(path).map_err(|e| problem(e.to_string()))
}

/// What every subcommand's `--help` ends with.
const ENV_HELP: &str =
    "Configuration: environment variables, or a .env file in the current directory \
(--env-file FILE reads another). .env.example lists every variable with a comment; \
`switchboard config reference` (docs/src/configuration.md) has them with their defaults.";

/// The variables that matter most for each subcommand, named in its `--help`.
fn key_variables(subcommand: &str) -> &'static str {
    match subcommand {
        "chat" => "LLM_BASE_URL and LLM_MODEL (required), LLM_API, LLM_API_KEY, DATA_DIR, WORKSPACE_DIR, SKILLS_DIR, RUST_LOG",
        "run" => "LLM_BASE_URL and LLM_MODEL (required), TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN, ACCESS_POLICY, DATABASE_URL, DATA_DIR, HEALTH_LISTEN, RUST_LOG, LOG_FORMAT",
        "doctor" => "LLM_BASE_URL and LLM_MODEL (and LLM_FALLBACK_*), DATABASE_URL, DATA_DIR, SKILLS_DIR, HTTP_TOOLS_FILE, SCRIPT_TOOLS_DIR, TELEGRAM_BOT_TOKEN, DISCORD_BOT_TOKEN",
        "model" => "LLM_API, LLM_BASE_URL, LLM_MODEL, LLM_CONTEXT_WINDOW, LLM_FALLBACK_*",
        "config" => "none (it describes them all)",
        _ => "DATABASE_URL (default: sqlite in DATA_DIR), DATA_DIR",
    }
}

fn with_env_help(command: clap::Command, top: &str) -> clap::Command {
    let name = command.get_name().to_owned();
    let top = if top.is_empty() { name.as_str() } else { top };
    let help = format!("Variables read: {}.\n\n{ENV_HELP}", key_variables(top));
    let top = top.to_owned();
    command
        .after_help(help)
        .mut_subcommands(|sub| with_env_help(sub, &top))
}

/// Parses the command line like `Args::parse`, with [`ENV_HELP`] after every
/// subcommand's help (and the top level's).
pub fn parse() -> crate::cli::Args {
    let command = crate::cli::Args::command()
        .after_help(ENV_HELP)
        .mut_subcommands(|sub| with_env_help(sub, ""));
    let matches = command.get_matches();
    crate::cli::Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}
