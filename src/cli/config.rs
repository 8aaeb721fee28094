//! Reading the configuration for a command: the admin commands (`pair`,
//! `events`, `tasks`, `approvals`, `memory`, `migrate`, `model`) never call the
//! model, so they run without `LLM_BASE_URL` / `LLM_MODEL`; and `config
//! reference`, which prints the reference of every variable.

use std::io::Write;
use std::process::ExitCode;
use switchboard::config::{Config, ConfigError};

/// `switchboard config …`.
#[derive(Debug, Clone, Copy, clap::Subcommand)]
pub enum ConfigAction {
    /// Print the configuration reference (Markdown, as docs/src/configuration.md).
    Reference,
}

/// Runs `action`; a closed pipe (`| head`) is not an error.
pub fn run(action: ConfigAction) -> ExitCode {
    match action {
        ConfigAction::Reference => {
            let text = switchboard::config::reference::render();
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
    }
    ExitCode::SUCCESS
}

/// Stands in for an unset `LLM_BASE_URL` in a command that never calls the
/// model (`.invalid` is a reserved name: nothing could ever answer there).
const UNSET_BASE_URL: &str = "http://llm-base-url-unset.invalid/v1";
/// Stands in for an unset `LLM_MODEL` likewise.
const UNSET_MODEL: &str = "<LLM_MODEL unset>";

/// The configuration of the environment (and `.env`). Without `needs_model`,
/// a missing `LLM_BASE_URL` or `LLM_MODEL` is no error: placeholders stand in
/// (see [`unset_model_vars`]); every other variable is checked as usual.
/// `read_dotenv`: whether `./.env` is read (not when `--env-file` named
/// another file, already loaded into the environment).
pub fn load(needs_model: bool, read_dotenv: bool) -> Result<Config, ConfigError> {
    // A missing .env is normal; a malformed one is reported by the lookups below.
    let dotenv = read_dotenv.then(dotenvy::dotenv).and_then(Result::ok);
    let first = Config::from_lookup(|k| std::env::var(k).ok());
    match first {
        Err(ConfigError::Missing { var, .. })
            if !needs_model && matches!(var, "LLM_BASE_URL" | "LLM_MODEL") =>
        {
            // `.env` is in the environment already.
            Config::from_lookup(|k| {
                let set = std::env::var(k).ok().filter(|v| !v.trim().is_empty());
                set.or_else(|| placeholder(k).map(str::to_owned))
            })
        }
        other => other,
    }
    .map(|mut config| {
        config.model_keys = switchboard::models::capture_keys();
        // Commands must not read the file the secrets came from.
        if let Some(path) = dotenv {
            config.keep_from_commands(path);
        }
        config
    })
}

fn placeholder(var: &str) -> Option<&'static str> {
    match var {
        "LLM_BASE_URL" => Some(UNSET_BASE_URL),
        "LLM_MODEL" => Some(UNSET_MODEL),
        _ => None,
    }
}

/// The model variables a command without the model ran without.
pub fn unset_model_vars(config: &Config) -> Vec<&'static str> {
    let mut unset = Vec::new();
    if config.llm.base_url == UNSET_BASE_URL {
        unset.push("LLM_BASE_URL");
    }
    if config.llm.model == UNSET_MODEL {
        unset.push("LLM_MODEL");
    }
    unset
}
