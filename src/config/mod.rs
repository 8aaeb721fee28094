//! Typed configuration from the environment (and `.env`), validated at start.

use crate::gateway::AccessPolicy;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;
use switchboard_platform::{Platform, UserId};

mod basics;
mod chat;
mod files;
mod limits;
mod llm_env;
mod mcp_serve;
mod otel;
mod protect;
pub mod reference;
mod search;
mod secrets;
mod web;

pub use crate::llm::{FallbackEndpoint, LlmConfig};
pub use mcp_serve::McpHttpConfig;
pub use otel::{OtelConfig, RootSampling, Sampling, DEFAULT_SERVICE_NAME};
pub use search::{SearchConfig, SearchProvider, DEFAULT_SEARCH_RESULTS};
pub use web::{WebConfig, MIN_WEB_TOKEN_CHARS};

/// Reads one variable, trimmed; `None` when unset or empty.
type Lookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

pub use crate::env::{flag, ConfigError};

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// The variables of fallback n: base URL, model, API key, context window, API,
/// text tool calls.
const FALLBACK_VARS: [[&str; 6]; 3] = [
    [
        "LLM_FALLBACK_1_BASE_URL",
        "LLM_FALLBACK_1_MODEL",
        "LLM_FALLBACK_1_API_KEY",
        "LLM_FALLBACK_1_CONTEXT_WINDOW",
        "LLM_FALLBACK_1_API",
        "LLM_FALLBACK_1_TEXT_TOOL_CALLS",
    ],
    [
        "LLM_FALLBACK_2_BASE_URL",
        "LLM_FALLBACK_2_MODEL",
        "LLM_FALLBACK_2_API_KEY",
        "LLM_FALLBACK_2_CONTEXT_WINDOW",
        "LLM_FALLBACK_2_API",
        "LLM_FALLBACK_2_TEXT_TOOL_CALLS",
    ],
    [
        "LLM_FALLBACK_3_BASE_URL",
        "LLM_FALLBACK_3_MODEL",
        "LLM_FALLBACK_3_API_KEY",
        "LLM_FALLBACK_3_CONTEXT_WINDOW",
        "LLM_FALLBACK_3_API",
        "LLM_FALLBACK_3_TEXT_TOOL_CALLS",
    ],
];

/// `WORKSPACE_QUOTA_MB` when unset: 2 GiB per user's folder.
pub const DEFAULT_WORKSPACE_QUOTA_MB: u64 = 2048;

/// Everything Switchboard's core needs, read once at start.
#[derive(Debug, Clone)]
pub struct Config {
    pub llm: LlmConfig,
    pub database_url: String,
    pub data_dir: PathBuf,
    pub workspace_dir: PathBuf,
    /// Bytes each user's workspace folder may hold (`WORKSPACE_QUOTA_MB`,
    /// default 2 GiB).
    pub workspace_quota: u64,
    /// User skills, `*.md` with front matter (`SKILLS_DIR`, default `./skills`).
    pub skills_dir: PathBuf,
    /// Operator-declared HTTP API tools (`HTTP_TOOLS_FILE`), credentials
    /// resolved; and the declared tools that could not be used, with why.
    pub http_tools: Vec<crate::tools::HttpToolDef>,
    pub http_tool_problems: Vec<crate::tools::HttpToolProblem>,
    /// Operator-declared script tools (`SCRIPT_TOOLS_DIR/*.json`) and the
    /// manifests that could not be used.
    pub script_tools: Vec<crate::tools::ScriptToolDef>,
    pub script_tool_problems: Vec<crate::tools::ScriptToolProblem>,
    /// `HTTP_TOOLS_FILE` and `SCRIPT_TOOLS_DIR` as set (`doctor` checks they exist).
    pub http_tools_file: Option<PathBuf>,
    pub script_tools_dir: Option<PathBuf>,
    /// Who may add tools from the chat (`TOOL_BUILDERS`).
    pub tool_builders: crate::tools::ToolBuilders,
    /// Whether users may set the agent's name, persona and style for their
    /// own direct messages (`IDENTITY_USER_EDITS`).
    pub identity_user_edits: bool,
    /// MCP servers (`MCP_SERVERS_FILE`), the entries that could not be used
    /// (or had unknown fields), and the file as set.
    pub mcp_servers: Vec<crate::mcp::McpServerDef>,
    pub mcp_problems: Vec<crate::mcp::McpProblem>,
    /// Entries of `SUBAGENTS_FILE` that were skipped, and why.
    pub role_problems: Vec<String>,
    pub mcp_servers_file: Option<PathBuf>,
    /// Per-chat settings (`CHATS_FILE`) and its entries that could not be used.
    pub chats: crate::chats::ChatBindings,
    pub chat_problems: Vec<crate::chats::ChatProblem>,
    /// `CHATS_FILE` and `SUBAGENTS_FILE` as set (re-read on reload).
    pub chats_file: Option<PathBuf>,
    pub subagents_file: Option<PathBuf>,
    /// Who may switch models, the routing rules and the budgets.
    pub models: crate::models::ModelSettings,
    /// The key variables catalogue models name, captured before the
    /// environment is sealed (empty from [`Config::from_lookup`]).
    pub model_keys: std::collections::BTreeMap<String, switchboard_platform::Secret>,
    /// Where `switchboard mcp` posts (`MCP_NOTIFY_CHAT`).
    pub mcp_notify_chat: Option<switchboard_platform::ChatAddress>,
    /// `switchboard mcp` over Streamable HTTP (`MCP_LISTEN`, `MCP_TOKEN`);
    /// none: over stdio.
    pub mcp_http: Option<McpHttpConfig>,
    /// Which of the agent's own tools `switchboard mcp` offers, as whom
    /// (`MCP_SERVER_TOOLS`, `MCP_SERVER_USER`).
    pub mcp_own_tools: crate::mcp::serve::OwnToolsConfig,
    pub access_policy: AccessPolicy,
    /// Numeric allowlists per platform (`TELEGRAM_ALLOWED_USERS`, ...).
    pub allowed_users: HashMap<Platform, HashSet<UserId>>,
    pub user_messages_per_minute: u32,
    pub max_tool_rounds: usize,
    pub approval_timeout: Duration,
    pub exec_timeout: Duration,
    /// How commands are confined (`EXEC_SANDBOX`, `EXEC_NETWORK`).
    pub exec_sandbox: crate::tools::SandboxConfig,
    /// Background tasks one conversation runs at once; more are queued.
    pub max_background_tasks: usize,
    /// Per-user caps across chats: background tasks (`MAX_TASKS_PER_USER`),
    /// schedules (`MAX_SCHEDULES_PER_USER`), turn time (`TURN_DEADLINE_SECS`)
    /// and approval presses once rate-limited (`APPROVAL_PRESSES_PER_MINUTE`).
    pub caps: crate::caps::UserCaps,
    /// Requests that must be answered from a tool: the built-in rules plus
    /// those of `INTENT_RULES_FILE`.
    pub intents: crate::agent::IntentRules,
    /// Offer the portfolio ledger tools (`PORTFOLIO_TOOLS`, default on).
    pub portfolio_tools: bool,
    /// Sub-agent roles offered as `delegate_to_<role>` (`SUBAGENTS`).
    pub subagents: Vec<crate::agent::Role>,
    /// `SUBAGENTS` as set (none: unset), applied again on a reload of
    /// `SUBAGENTS_FILE`.
    pub subagents_setting: Option<String>,
    pub web_fetch_allow: Vec<String>,
    /// The `web_search` tool's provider (`SEARCH_PROVIDER`, …); none: no tool.
    pub search: Option<SearchConfig>,
    pub system_prompt: Option<String>,
    /// IANA time zone for cron schedules.
    pub timezone: String,
    pub log_format: LogFormat,
    /// Where `/healthz` and `/metrics` are served (`HEALTH_LISTEN`); off when unset.
    pub health_listen: Option<std::net::SocketAddr>,
    /// The operator web console (`WEB_LISTEN`, `WEB_TOKEN`); off when unset.
    pub web: WebConfig,
    /// Trace export over OTLP/HTTP (`OTEL_EXPORTER_OTLP_ENDPOINT`); off when unset.
    pub otel: OtelConfig,
    /// Long-term memory, recall and feedback (`MEMORY_*`, `FEEDBACK_BUTTONS`).
    pub memory: crate::memory::MemoryConfig,
    /// Photos, voice notes and files (`MEDIA_*`, `LLM_VISION`, `STT_*`).
    pub media: crate::media::MediaConfig,
    /// Enabled chat platforms (Telegram, Discord).
    pub platforms: crate::wiring::PlatformConfigs,
    /// What a chat sees of a turn's work unless it chose with `/verbose`
    /// (`CHAT_VERBOSITY`, default tools).
    pub chat_verbosity: crate::gateway::Verbosity,
    /// How a session takes messages sent during a turn unless it chose with
    /// `/queue` (`QUEUE_MODE`, default followup).
    pub queue_mode: crate::gateway::QueueMode,
}

const FIX_LLM_BASE_URL: &str =
    "set it to the endpoint's base URL, e.g. LLM_BASE_URL=http://localhost:11434/v1 for a local Ollama (or https://api.anthropic.com/v1 with LLM_API=anthropic)";

/// The roles `SUBAGENTS` (`setting`; none: unset) offers among the built-in
/// ones and `file_roles` (`SUBAGENTS_FILE`'s).
pub fn offered_roles(
    setting: Option<&str>,
    file_roles: &[crate::agent::Role],
) -> Result<Vec<crate::agent::Role>, ConfigError> {
    limits::subagents(setting.map(str::to_owned), file_roles)
}

impl Config {
    /// Reads the process environment (after loading `.env` if present).
    pub fn from_env() -> Result<Config, ConfigError> {
        // A missing .env is normal; a malformed one is reported by the lookups below.
        let dotenv = dotenvy::dotenv().ok();
        let mut config = Config::from_lookup(|k| std::env::var(k).ok())?;
        if let Some(path) = dotenv {
            config.keep_from_commands(path);
        }
        Ok(config)
    }

    /// Builds the config from any variable source (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let get = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let (base_url, model) = endpoint(&get)?;
        let data_dir = PathBuf::from(get("DATA_DIR").unwrap_or_else(|| "./data".into()));
        let database_url = get("DATABASE_URL")
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("switchboard.db").display()));
        let workspace_dir = get("WORKSPACE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| data_dir.join("workspace"));
        let platforms = crate::wiring::PlatformConfigs::from_lookup(&get, &data_dir)?;
        let files = files::load(&get)?;
        let media = crate::media::MediaConfig::from_lookup(&get, &data_dir)?;
        let mut config = Config {
            media,
            intents: files.intents,
            portfolio_tools: flag(&get, "PORTFOLIO_TOOLS")?.unwrap_or(true),
            llm: llm_env::llm(&get, base_url, model)?,
            database_url,
            data_dir,
            workspace_dir,
            workspace_quota: number::<u64>(&get, "WORKSPACE_QUOTA_MB")?
                .unwrap_or(DEFAULT_WORKSPACE_QUOTA_MB)
                .saturating_mul(1 << 20),
            skills_dir: PathBuf::from(get("SKILLS_DIR").unwrap_or_else(|| "./skills".into())),
            http_tools: files.http_tools,
            http_tool_problems: files.http_tool_problems,
            script_tools: files.script_tools,
            script_tool_problems: files.script_tool_problems,
            http_tools_file: get("HTTP_TOOLS_FILE").map(PathBuf::from),
            mcp_notify_chat: mcp_serve::notify_chat(&get)?,
            mcp_http: mcp_serve::http(&get)?,
            mcp_own_tools: mcp_serve::own_tools(&get)?,
            models: crate::models::ModelSettings::from_lookup(&get)?,
            chats: files.chats,
            chat_problems: files.chat_problems,
            chats_file: get("CHATS_FILE").map(PathBuf::from),
            subagents_file: get("SUBAGENTS_FILE").map(PathBuf::from),
            model_keys: std::collections::BTreeMap::new(),
            script_tools_dir: get("SCRIPT_TOOLS_DIR").map(PathBuf::from),
            tool_builders: crate::tools::ToolBuilders::from_lookup(&get)?,
            identity_user_edits: chat::identity_user_edits(&get)?,
            mcp_servers: files.mcp_servers,
            mcp_problems: files.mcp_problems,
            role_problems: files.role_problems.clone(),
            mcp_servers_file: get("MCP_SERVERS_FILE").map(PathBuf::from),
            access_policy: basics::access_policy(&get)?,
            allowed_users: basics::allowed_users(&get)?,
            user_messages_per_minute: number(&get, "USER_MESSAGES_PER_MINUTE")?.unwrap_or(20),
            max_tool_rounds: number(&get, "MAX_TOOL_ROUNDS")?.unwrap_or(15),
            approval_timeout: Duration::from_secs(number(&get, "APPROVAL_TIMEOUT")?.unwrap_or(600)),
            exec_timeout: Duration::from_secs(number(&get, "EXEC_TIMEOUT")?.unwrap_or(120)),
            exec_sandbox: crate::tools::SandboxConfig::from_lookup(&get)?,
            subagents: limits::subagents(get("SUBAGENTS"), &files.roles)?,
            subagents_setting: get("SUBAGENTS"),
            max_background_tasks: number(&get, "MAX_BACKGROUND_TASKS")?
                .unwrap_or(crate::tasks::DEFAULT_TASKS_PER_SESSION),
            caps: limits::caps(&get)?,
            web_fetch_allow: comma_list(get("WEB_FETCH_ALLOW")),
            search: search::search(&get)?,
            system_prompt: get("SYSTEM_PROMPT"),
            timezone: basics::timezone(&get)?,
            log_format: basics::log_format(&get)?,
            health_listen: basics::health_listen(&get)?,
            web: web::web(&get)?,
            otel: otel::otel(&get)?,
            memory: crate::memory::MemoryConfig::from_lookup(&get)?,
            platforms,
            chat_verbosity: chat::verbosity(&get)?,
            queue_mode: chat::queue_mode(&get)?,
        };
        config.exec_sandbox.protect = protect::protected(&config, &get);
        Ok(config)
    }
}

/// The two settings without which nothing runs: `LLM_BASE_URL` and `LLM_MODEL`.
fn endpoint(get: &impl Fn(&str) -> Option<String>) -> Result<(String, String), ConfigError> {
    let base_url = get("LLM_BASE_URL").ok_or(ConfigError::Missing {
        var: "LLM_BASE_URL",
        fix: FIX_LLM_BASE_URL,
    })?;
    llm_env::check_base_url("LLM_BASE_URL", &base_url)?;
    let model = get("LLM_MODEL").ok_or(ConfigError::Missing {
        var: "LLM_MODEL",
        fix: "set it to the model name the endpoint serves, e.g. LLM_MODEL=llama3.1:8b",
    })?;
    Ok((base_url, model))
}

/// A comma-separated list, blanks dropped.
fn comma_list(raw: Option<String>) -> Vec<String> {
    raw.map(|v| {
        v.split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    })
    .unwrap_or_default()
}

/// Parses an optional positive number.
fn number<T>(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<T>, ConfigError>
where
    T: std::str::FromStr + PartialOrd + Default,
{
    match get(var) {
        None => Ok(None),
        Some(raw) => match raw.parse::<T>() {
            Ok(v) if v > T::default() => Ok(Some(v)),
            _ => Err(ConfigError::Invalid {
                var,
                problem: format!("{raw:?} is not a positive number"),
                fix: "use a positive whole number, or unset it for the default",
            }),
        },
    }
}

fn parse_ids(var: &'static str, raw: Option<String>) -> Result<HashSet<UserId>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(HashSet::new());
    };
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<i64>()
                .map(UserId)
                .map_err(|_| ConfigError::Invalid {
                    var,
                    problem: format!("{s:?} is not a numeric user id"),
                    fix: "list numeric ids separated by commas (usernames are not accepted)",
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::TextToolCalls;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn the_thinking_budget_follows_anthropic_rules_when_it_is_used() {
        let base = [("LLM_BASE_URL", "http://x/v1"), ("LLM_MODEL", "m")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = base.to_vec();
            pairs.extend_from_slice(extra);
            cfg(&pairs)
        };
        let anthropic = ("LLM_API", "anthropic");
        assert_eq!(with(&[]).unwrap().llm.thinking_budget, None);
        assert_eq!(
            with(&[("LLM_THINKING_BUDGET", "0")])
                .unwrap()
                .llm
                .thinking_budget,
            None,
            "0 turns it off"
        );
        assert_eq!(
            with(&[("LLM_THINKING_BUDGET", "512")])
                .unwrap()
                .llm
                .thinking_budget,
            Some(512),
            "Gemini takes small budgets"
        );
        let e = with(&[anthropic, ("LLM_THINKING_BUDGET", "512")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("LLM_THINKING_BUDGET") && e.contains("1024"),
            "{e}"
        );
        let e = with(&[
            anthropic,
            ("LLM_THINKING_BUDGET", "4096"),
            ("LLM_MAX_OUTPUT_TOKENS", "4096"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("LLM_MAX_OUTPUT_TOKENS"), "{e}");
        let fallback = with(&[
            ("LLM_THINKING_BUDGET", "100"),
            ("LLM_FALLBACK_1_BASE_URL", "http://y/v1"),
            ("LLM_FALLBACK_1_MODEL", "claude"),
            ("LLM_FALLBACK_1_API", "anthropic"),
        ]);
        assert!(fallback.is_err(), "an Anthropic fallback counts too");
    }

    #[test]
    fn minimal_config_has_defaults() {
        let c = cfg(&[
            ("LLM_BASE_URL", "http://localhost:11434/v1"),
            ("LLM_MODEL", "llama3.1"),
        ])
        .unwrap();
        assert_eq!(c.database_url, "sqlite://./data/switchboard.db");
        assert_eq!(c.access_policy, AccessPolicy::Pairing);
        assert_eq!(c.max_tool_rounds, 15);
        assert_eq!(c.approval_timeout, Duration::from_secs(600));
        assert_eq!(c.max_background_tasks, 3);
        assert_eq!(c.caps, crate::caps::UserCaps::default());
        let roles: Vec<&str> = c.subagents.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(roles, ["research", "analysis"]);
        assert_eq!(c.llm.idle_timeout, Duration::from_secs(60));
        assert_eq!(c.llm.frequency_penalty, None);
        assert!(c.llm.fallbacks.is_empty());
    }

    #[test]
    fn fallbacks_are_read_in_order_until_the_first_gap() {
        let c = cfg(&[
            ("LLM_BASE_URL", "http://primary/v1"),
            ("LLM_MODEL", "claude-sonnet"),
            ("LLM_FALLBACK_1_BASE_URL", "http://one/v1"),
            ("LLM_FALLBACK_1_MODEL", "deepseek-chat"),
            ("LLM_FALLBACK_1_API_KEY", "sk-fallback-secret"),
            ("LLM_FALLBACK_3_BASE_URL", "http://three/v1"),
            ("LLM_FALLBACK_3_MODEL", "unused"),
        ])
        .unwrap();
        let models: Vec<&str> = c.llm.fallbacks.iter().map(|f| f.model.as_str()).collect();
        assert_eq!(models, ["deepseek-chat"]);
        assert!(!format!("{c:?}").contains("sk-fallback-secret"));
        let e = cfg(&[
            ("LLM_BASE_URL", "http://primary/v1"),
            ("LLM_MODEL", "m"),
            ("LLM_FALLBACK_1_BASE_URL", "http://one/v1"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("LLM_FALLBACK_1_MODEL"), "{e}");
        let e = cfg(&[
            ("LLM_BASE_URL", "http://primary/v1"),
            ("LLM_MODEL", "m"),
            ("LLM_FALLBACK_1_BASE_URL", "ftp://one"),
            ("LLM_FALLBACK_1_MODEL", "m2"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("LLM_FALLBACK_1_BASE_URL"), "{e}");
    }

    #[test]
    fn text_tool_calls_default_to_auto_and_fallbacks_inherit() {
        let base = [("LLM_BASE_URL", "http://x/v1"), ("LLM_MODEL", "m")];
        let c = cfg(&base).unwrap();
        assert_eq!(c.llm.text_tool_calls, TextToolCalls::Auto);
        let mut vars = base.to_vec();
        vars.extend([
            ("LLM_TEXT_TOOL_CALLS", "off"),
            ("LLM_FALLBACK_1_BASE_URL", "http://one/v1"),
            ("LLM_FALLBACK_1_MODEL", "a"),
            ("LLM_FALLBACK_2_BASE_URL", "http://two/v1"),
            ("LLM_FALLBACK_2_MODEL", "b"),
            ("LLM_FALLBACK_2_TEXT_TOOL_CALLS", "On"),
        ]);
        let c = cfg(&vars).unwrap();
        assert_eq!(c.llm.text_tool_calls, TextToolCalls::Off);
        let each: Vec<TextToolCalls> = c.llm.fallbacks.iter().map(|f| f.text_tool_calls).collect();
        assert_eq!(each, [TextToolCalls::Off, TextToolCalls::On]);
        let mut vars = base.to_vec();
        vars.push(("LLM_TEXT_TOOL_CALLS", "sometimes"));
        let e = cfg(&vars).unwrap_err().to_string();
        assert!(e.contains("LLM_TEXT_TOOL_CALLS"), "{e}");
    }

    #[test]
    fn frequency_penalty_is_bounded() {
        let with = |v: &str| {
            cfg(&[
                ("LLM_BASE_URL", "http://x"),
                ("LLM_MODEL", "m"),
                ("LLM_FREQUENCY_PENALTY", v),
            ])
        };
        assert_eq!(with("0.3").unwrap().llm.frequency_penalty, Some(0.3));
        assert_eq!(with("-1").unwrap().llm.frequency_penalty, Some(-1.0));
        for bad in ["2.5", "lots", "NaN"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(
                e.contains("LLM_FREQUENCY_PENALTY") && e.contains("-2.0 to 2.0"),
                "{e}"
            );
        }
    }

    #[test]
    fn errors_name_the_variable_and_the_fix() {
        let e = cfg(&[]).unwrap_err().to_string();
        assert!(e.contains("LLM_BASE_URL") && e.contains("Ollama"), "{e}");
        let e = cfg(&[("LLM_BASE_URL", "ftp://x"), ("LLM_MODEL", "m")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("LLM_BASE_URL"), "{e}");
        let e = cfg(&[
            ("LLM_BASE_URL", "http://x"),
            ("LLM_MODEL", "m"),
            ("TELEGRAM_ALLOWED_USERS", "12,@bob"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("TELEGRAM_ALLOWED_USERS") && e.contains("numeric"),
            "{e}"
        );
        let e = cfg(&[
            ("LLM_BASE_URL", "http://x"),
            ("LLM_MODEL", "m"),
            ("MAX_TOOL_ROUNDS", "0"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("MAX_TOOL_ROUNDS"), "{e}");
    }

    #[test]
    fn api_key_is_redacted_in_debug() {
        let c = cfg(&[
            ("LLM_BASE_URL", "http://x"),
            ("LLM_MODEL", "m"),
            ("LLM_API_KEY", "sk-very-secret"),
        ])
        .unwrap();
        assert!(!format!("{c:?}").contains("sk-very-secret"));
    }
}
