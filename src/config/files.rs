//! The files the configuration names, loaded once at start: HTTP tools,
//! script tools, MCP servers and intent rules. Parsing the variables stays in `config`;
//! reading what they point to happens here.

use super::{ConfigError, Lookup};
use crate::agent::IntentRules;
use crate::tools::{
    load_http_tools, load_script_tools, HttpToolDef, HttpToolProblem, ScriptToolDef,
    ScriptToolProblem, BUILTIN_TOOLS,
};
use std::path::Path;

/// What the configured files hold.
pub(super) struct Files {
    pub http_tools: Vec<HttpToolDef>,
    pub http_tool_problems: Vec<HttpToolProblem>,
    pub script_tools: Vec<ScriptToolDef>,
    pub script_tool_problems: Vec<ScriptToolProblem>,
    pub intents: IntentRules,
    pub mcp_servers: Vec<crate::mcp::McpServerDef>,
    pub mcp_problems: Vec<crate::mcp::McpProblem>,
    pub chats: crate::chats::ChatBindings,
    pub chat_problems: Vec<crate::chats::ChatProblem>,
    /// The operator's sub-agent roles (`SUBAGENTS_FILE`).
    pub roles: Vec<crate::agent::Role>,
    /// Entries of `SUBAGENTS_FILE` that were skipped, and why.
    pub role_problems: Vec<String>,
}

/// Loads `HTTP_TOOLS_FILE`, `SCRIPT_TOOLS_DIR` and `INTENT_RULES_FILE`. Bad
/// tool entries are problems reported by name (the rest load); an unreadable
/// intent rules file is an error.
pub(super) fn load(get: &Lookup<'_>) -> Result<Files, ConfigError> {
    let (http_tools, http_tool_problems) = match get("HTTP_TOOLS_FILE") {
        Some(path) => load_http_tools(Path::new(&path), BUILTIN_TOOLS, get),
        None => (Vec::new(), Vec::new()),
    };
    let (script_tools, script_tool_problems) = match get("SCRIPT_TOOLS_DIR") {
        Some(dir) => {
            let mut taken: Vec<&str> = BUILTIN_TOOLS.to_vec();
            taken.extend(http_tools.iter().map(|t| t.name.as_str()));
            load_script_tools(Path::new(&dir), &taken)
        }
        None => (Vec::new(), Vec::new()),
    };
    let intents = match get("INTENT_RULES_FILE") {
        None => IntentRules::builtin(),
        Some(path) => IntentRules::with_file(Path::new(&path))
            .map_err(|e| ConfigError::Invalid {
                var: "INTENT_RULES_FILE",
                problem: e.to_string(),
                fix: "fix the file: a JSON list like [{\"pattern\": \"(?i)\\\\bweather\\\\b\", \"tool\": \"get_weather\"}], or unset it",
            })?,
    };
    let (mcp_servers, mcp_problems) = match get("MCP_SERVERS_FILE") {
        Some(path) => crate::mcp::load_mcp_servers(Path::new(&path), get),
        None => (Vec::new(), Vec::new()),
    };
    let (roles, role_problems) = match get("SUBAGENTS_FILE") {
        None => (Vec::new(), Vec::new()),
        Some(path) => crate::agent::load_roles(Path::new(&path)).map_err(|problem| {
            ConfigError::Invalid {
                var: "SUBAGENTS_FILE",
                problem,
                fix: "fix the file: {\"roles\": [{\"name\", \"description\", \"system_prompt\", \"tools\": [...], \"model\"?, \"max_rounds\"?, \"approvals\"?}]}, or unset it",
            }
        })?,
    };
    let all_roles: Vec<crate::agent::Role> = crate::agent::builtin_roles()
        .into_iter()
        .chain(roles.iter().cloned())
        .collect();
    let role_tools: Vec<(&str, Vec<&str>)> = all_roles
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.tools.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let (chats, chat_problems) = match get("CHATS_FILE") {
        Some(path) => crate::chats::load(Path::new(&path), &role_tools),
        None => Default::default(),
    };
    Ok(Files {
        roles,
        role_problems,
        chats,
        chat_problems,
        mcp_servers,
        mcp_problems,
        http_tools,
        http_tool_problems,
        script_tools,
        script_tool_problems,
        intents,
    })
}
