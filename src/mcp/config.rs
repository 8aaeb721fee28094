//! `MCP_SERVERS_FILE`: the Claude Desktop format (`{"mcpServers": {...}}`),
//! `${VAR}` expanded from the environment (those values become secrets), and
//! each bad entry or unknown field reported by the server's name.

use super::approval::{Approval, ApprovalPolicy};
use super::names::sanitize;
use crate::tools::Network;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The per-call timeout unless a server sets `timeout_secs`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach a server.
#[derive(Clone)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// The entry's variables; the child gets these and `PATH` only.
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
        /// The gateway's `PATH`, passed on so `npx`/`uvx` resolve.
        path: Option<String>,
    },
    /// A Streamable HTTP endpoint; `headers` go with every request.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One configured server.
#[derive(Clone)]
pub struct McpServerDef {
    pub name: String,
    pub transport: McpTransport,
    pub timeout: Duration,
    pub policy: ApprovalPolicy,
    /// Values expanded from `${VAR}`: redacted everywhere.
    pub secrets: Vec<String>,
    /// Whether a stdio server's sandbox has network access (`"network"`).
    pub network: Network,
    /// Paths a stdio server may read besides its own (`"read"`).
    pub read: Vec<PathBuf>,
}

/// Env values and headers may hold credentials: only their names are shown.
impl std::fmt::Debug for McpServerDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("McpServerDef");
        d.field("name", &self.name);
        match &self.transport {
            McpTransport::Stdio { command, env, .. } => d
                .field("command", command)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>()),
            McpTransport::Http { url, headers } => {
                d.field("url", &crate::secrets::shown_url(url)).field(
                    "headers",
                    &headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                )
            }
        };
        d.field("timeout", &self.timeout).finish()
    }
}

/// An entry (or a field of one) that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpProblem {
    pub server: String,
    pub problem: String,
}

const KNOWN_FIELDS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "type",
    "timeout_secs",
    "approval",
    "tools",
    "allow",
    "deny",
    "disabled",
    "network",
    "read",
];

/// Reads `path`. Entries that cannot be used are problems (the others load);
/// unknown fields are problems too, but their entry still loads.
pub fn load_mcp_servers(
    path: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> (Vec<McpServerDef>, Vec<McpProblem>) {
    let whole = |problem: String| {
        (
            Vec::new(),
            vec![McpProblem {
                server: "*".into(),
                problem,
            }],
        )
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return whole(format!("cannot read {}: {e}", path.display())),
    };
    let root: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return whole(format!("{} is not JSON: {e}", path.display())),
    };
    let Some(servers) = root.get("mcpServers").and_then(Value::as_object) else {
        return whole(format!(
            "{} has no \"mcpServers\" object (the Claude Desktop format)",
            path.display()
        ));
    };
    let mut defs = Vec::new();
    let mut problems = Vec::new();
    let mut taken: HashMap<String, String> = HashMap::new();
    for (name, entry) in servers {
        let mut report = |problem: String| {
            problems.push(McpProblem {
                server: name.clone(),
                problem,
            })
        };
        let Some(entry) = entry.as_object() else {
            report("the entry is not an object".into());
            continue;
        };
        for key in entry.keys().filter(|k| !KNOWN_FIELDS.contains(&k.as_str())) {
            report(format!("unknown field `{key}` (ignored)"));
        }
        if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        match parse_entry(name, entry, &env) {
            Ok(def) => {
                let key = sanitize(&def.name);
                if let Some(other) = taken.get(&key) {
                    report(format!(
                        "its tool prefix `mcp_{key}_` is the same as server `{other}`'s"
                    ));
                    continue;
                }
                taken.insert(key, name.clone());
                defs.push(def);
            }
            Err(problem) => report(problem),
        }
    }
    (defs, problems)
}

fn parse_entry(
    name: &str,
    entry: &Map<String, Value>,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<McpServerDef, String> {
    if name.is_empty() || sanitize(name).is_empty() {
        return Err("the server name has no letters or digits".into());
    }
    let mut secrets = Vec::new();
    let mut expand = |field: &str, raw: &str| expand(raw, env, &mut secrets, field);
    let transport = match (entry.get("command"), entry.get("url")) {
        (Some(_), Some(_)) => return Err("has both `command` and `url`; use one".into()),
        (None, None) => return Err("needs `command` (stdio) or `url` (HTTP)".into()),
        (Some(command), None) => stdio_transport(command, entry, env, &mut expand)?,
        (None, Some(url)) => http_transport(url, entry, &mut expand)?,
    };
    let timeout = call_timeout(entry.get("timeout_secs"))?;
    let policy = approval_policy(entry)?;
    let network = network(entry.get("network"))?;
    let read = strings(entry.get("read"), "read")?
        .iter()
        .map(|p| expand("read", p).map(PathBuf::from))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(relative) = read.iter().find(|p| p.is_relative()) {
        return Err(format!(
            "`read` paths must be absolute: {}",
            relative.display()
        ));
    }
    Ok(McpServerDef {
        name: name.to_owned(),
        transport,
        timeout,
        policy,
        secrets,
        network,
        read,
    })
}

/// Expands `${VAR}` in a field's value, remembering what it expanded to.
type Expand<'a> = dyn FnMut(&str, &str) -> Result<String, String> + 'a;

fn stdio_transport(
    command: &Value,
    entry: &Map<String, Value>,
    env: &impl Fn(&str) -> Option<String>,
    expand: &mut Expand<'_>,
) -> Result<McpTransport, String> {
    let command = command
        .as_str()
        .filter(|c| !c.trim().is_empty())
        .ok_or("`command` must be a non-empty string")?;
    let command = expand("command", command)?;
    let args = strings(entry.get("args"), "args")?
        .iter()
        .map(|a| expand("args", a))
        .collect::<Result<_, _>>()?;
    let env_vars = pairs(entry.get("env"), "env")?
        .into_iter()
        .map(|(k, v)| Ok((k, expand("env", &v)?)))
        .collect::<Result<_, String>>()?;
    let cwd = match entry.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(PathBuf::from(expand("cwd", c)?)),
        Some(_) => return Err("`cwd` must be a string".into()),
    };
    Ok(McpTransport::Stdio {
        command,
        args,
        env: env_vars,
        cwd,
        path: env("PATH"),
    })
}

fn http_transport(
    url: &Value,
    entry: &Map<String, Value>,
    expand: &mut Expand<'_>,
) -> Result<McpTransport, String> {
    let url = url.as_str().ok_or("`url` must be a string")?;
    let url = expand("url", url)?;
    let parsed = url::Url::parse(&url).map_err(|e| format!("`url` is invalid: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("`url` must be http or https".into());
    }
    let headers = pairs(entry.get("headers"), "headers")?
        .into_iter()
        .map(|(k, v)| Ok((k, expand("headers", &v)?)))
        .collect::<Result<_, String>>()?;
    Ok(McpTransport::Http { url, headers })
}

/// `"network"` of a server entry: `allow` (default) or `none`.
fn network(value: Option<&Value>) -> Result<Network, String> {
    match value {
        None => Ok(Network::Allow),
        Some(Value::String(s)) if s == "allow" => Ok(Network::Allow),
        Some(Value::String(s)) if s == "none" => Ok(Network::None),
        Some(_) => Err("`network` must be \"allow\" or \"none\"".into()),
    }
}

fn call_timeout(value: Option<&Value>) -> Result<Duration, String> {
    match value {
        None => Ok(DEFAULT_CALL_TIMEOUT),
        Some(v) => match v.as_u64() {
            Some(n) if (1..=3600).contains(&n) => Ok(Duration::from_secs(n)),
            _ => Err("`timeout_secs` must be a whole number from 1 to 3600".into()),
        },
    }
}

/// The server's `approval`, per-tool overrides, `allow` and `deny`.
fn approval_policy(entry: &Map<String, Value>) -> Result<ApprovalPolicy, String> {
    let mut policy = ApprovalPolicy {
        default: approval(entry.get("approval"), "approval")?.unwrap_or(Approval::Always),
        ..ApprovalPolicy::default()
    };
    if let Some(tools) = entry.get("tools") {
        let tools = tools.as_object().ok_or("`tools` must be an object")?;
        for (tool, over) in tools {
            let field = format!("tools.{tool}.approval");
            let over = over.as_object().ok_or_else(|| {
                format!("`tools.{tool}` must be an object like {{\"approval\": \"never\"}}")
            })?;
            if let Some(a) = approval(over.get("approval"), &field)? {
                policy.tools.insert(tool.clone(), a);
            }
        }
    }
    if entry.contains_key("allow") {
        policy.allow = Some(strings(entry.get("allow"), "allow")?);
    }
    policy.deny = strings(entry.get("deny"), "deny")?;
    Ok(policy)
}

fn approval(value: Option<&Value>, field: &str) -> Result<Option<Approval>, String> {
    match value {
        None => Ok(None),
        Some(Value::String(s)) => match s.as_str() {
            "always" => Ok(Some(Approval::Always)),
            "never" => Ok(Some(Approval::Never)),
            "hints" => Ok(Some(Approval::Hints)),
            other => Err(format!(
                "`{field}` is {other:?}; use \"always\", \"never\" or \"hints\""
            )),
        },
        Some(_) => Err(format!("`{field}` must be a string")),
    }
}

fn strings(value: Option<&Value>, field: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("`{field}` must be a list of strings"))
            })
            .collect(),
        Some(_) => Err(format!("`{field}` must be a list of strings")),
    }
}

fn pairs(value: Option<&Value>, field: &str) -> Result<Vec<(String, String)>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(format!("`{field}.{k}` must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{field}` must be an object of strings")),
    }
}

/// `raw` with each `${VAR}` replaced by its value, which is kept as a secret.
fn expand(
    raw: &str,
    env: &impl Fn(&str) -> Option<String>,
    secrets: &mut Vec<String>,
    field: &str,
) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`{field}` has an unclosed `${{`"))?;
        let var = &after[..end];
        let value = env(var).ok_or_else(|| {
            format!("`{field}` names ${{{var}}}, which is not set in the environment")
        })?;
        out.push_str(&value);
        secrets.push(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn load(json: &str, vars: &[(&str, &str)]) -> (Vec<McpServerDef>, Vec<McpProblem>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(&path, json).unwrap();
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        load_mcp_servers(&path, |k| vars.get(k).cloned())
    }

    #[test]
    fn variables_expand_into_secrets_and_bad_entries_are_reported_by_name() {
        let (defs, problems) = load(
            r#"{"mcpServers": {
                "files": {"command": "npx", "args": ["-y", "srv", "${ROOT}"],
                          "env": {"TOKEN": "Bearer ${API_TOKEN}"}, "autoApprove": []},
                "remote": {"url": "https://example.com/mcp",
                           "headers": {"Authorization": "Bearer ${API_TOKEN}"}},
                "nothing": {"args": []},
                "missing": {"command": "x", "env": {"K": "${UNSET_VAR}"}},
                "strict": {"command": "x", "approval": "sometimes"},
                "timeouts": {"command": "x", "timeout_secs": 0}
            }}"#,
            &[
                ("ROOT", "/srv/data"),
                ("API_TOKEN", "tok-123456789"),
                ("PATH", "/usr/bin"),
            ],
        );
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["files", "remote"]);
        let McpTransport::Stdio {
            args, env, path, ..
        } = &defs[0].transport
        else {
            unreachable!()
        };
        assert_eq!(args[2], "/srv/data");
        assert_eq!(env[0], ("TOKEN".into(), "Bearer tok-123456789".into()));
        assert_eq!(path.as_deref(), Some("/usr/bin"));
        assert!(defs[0].secrets.contains(&"tok-123456789".to_owned()));
        assert!(!format!("{:?}", defs[0]).contains("tok-123456789"));
        assert!(!format!("{:?}", defs[1]).contains("tok-123456789"));
        let by: HashMap<&str, &str> = problems
            .iter()
            .map(|p| (p.server.as_str(), p.problem.as_str()))
            .collect();
        assert!(
            by["files"].contains("unknown field `autoApprove`"),
            "{problems:?}"
        );
        assert!(by["nothing"].contains("needs `command`"), "{problems:?}");
        assert!(by["missing"].contains("${UNSET_VAR}"), "{problems:?}");
        assert!(by["strict"].contains("\"sometimes\""), "{problems:?}");
        assert!(by["timeouts"].contains("timeout_secs"), "{problems:?}");
    }

    #[test]
    fn approval_options_are_read() {
        let (defs, problems) = load(
            r#"{"mcpServers": {"s": {"command": "x", "approval": "hints",
                "tools": {"wipe": {"approval": "always"}, "echo": {"approval": "never"}},
                "allow": ["echo", "wipe"], "deny": ["wipe"], "timeout_secs": 5}}}"#,
            &[],
        );
        assert!(problems.is_empty(), "{problems:?}");
        let p = &defs[0].policy;
        assert_eq!(p.default, Approval::Hints);
        assert_eq!(p.tools["wipe"], Approval::Always);
        assert_eq!(
            p.allow.as_deref(),
            Some(&["echo".to_owned(), "wipe".to_owned()][..])
        );
        assert_eq!(p.deny, ["wipe"]);
        assert_eq!(defs[0].timeout, Duration::from_secs(5));
    }

    #[test]
    fn a_file_that_is_not_the_format_is_one_problem() {
        let (defs, problems) = load(r#"{"servers": {}}"#, &[]);
        assert!(defs.is_empty());
        assert!(problems[0].problem.contains("mcpServers"));
    }
}
