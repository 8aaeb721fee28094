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
    Ok(Files {
        mcp_servers,
        mcp_problems,
        http_tools,
        http_tool_problems,
        script_tools,
        script_tool_problems,
        intents,
    })
}
