//! Operator-declared HTTP API tools: the JSON file (`HTTP_TOOLS_FILE`) and
//! its validation. Credentials come from environment variables named in the
//! file, never from the file itself, and never reach the model.

use super::declared::{valid_tool_name, DeclaredSchema};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use switchboard_platform::Secret;

/// The file: `{"tools": [...]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsFile {
    tools: Vec<Value>,
}

/// One tool as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    description: String,
    #[serde(default = "default_method")]
    method: String,
    /// `{param}` placeholders in the path or query, filled from the arguments.
    url: String,
    /// JSON Schema of the arguments object (`type: object`, `properties`).
    #[serde(default = "empty_schema")]
    parameters: Value,
    #[serde(default)]
    auth: Option<RawAuth>,
    /// Fixed, non-secret headers.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Default: GET does not, every other method does.
    requires_approval: Option<bool>,
    /// Reach a loopback/private address (an internal API the operator named).
    #[serde(default)]
    allow_private: bool,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    /// The environment variable holding the credential.
    env: String,
    /// Send it in this header...
    header: Option<String>,
    /// ...with this prefix (e.g. `Bearer `)...
    #[serde(default)]
    prefix: String,
    /// ...or as this query parameter.
    query: Option<String>,
}

fn default_method() -> String {
    "GET".into()
}

fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Where the credential goes.
#[derive(Debug, Clone)]
pub enum AuthPlace {
    Header { name: String, prefix: String },
    Query(String),
}

/// A validated tool definition.
#[derive(Debug, Clone)]
pub struct HttpToolDef {
    pub name: String,
    pub description: String,
    pub method: reqwest::Method,
    pub url: String,
    pub parameters: DeclaredSchema,
    /// Placeholders in `url`.
    pub placeholders: Vec<String>,
    pub auth: Option<(AuthPlace, Secret)>,
    pub headers: Vec<(String, String)>,
    pub requires_approval: bool,
    pub allow_private: bool,
    pub timeout: Duration,
}

/// A tool of the file that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpToolProblem {
    pub file: PathBuf,
    pub tool: String,
    pub problem: String,
}

/// Reads the tools of `path`; `reserved` are names already taken (built-in
/// tools). `env` looks up credentials. Tools that cannot be used are returned
/// with the reason; the others load.
pub fn load_http_tools(
    path: &Path,
    reserved: &[&str],
    env: impl Fn(&str) -> Option<String>,
) -> (Vec<HttpToolDef>, Vec<HttpToolProblem>) {
    let problem = |tool: &str, problem: String| HttpToolProblem {
        file: path.to_owned(),
        tool: tool.to_owned(),
        problem,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            return (
                Vec::new(),
                vec![problem("*", format!("cannot read it: {e}"))],
            )
        }
    };
    let file: ToolsFile = match serde_json::from_str(&text) {
        Ok(f) => f,
        Err(e) => {
            let msg = format!("not a {{\"tools\": [...]}} JSON file: {e}");
            return (Vec::new(), vec![problem("*", msg)]);
        }
    };
    let mut defs: Vec<HttpToolDef> = Vec::new();
    let mut problems = Vec::new();
    for (i, raw) in file.tools.into_iter().enumerate() {
        let label = raw
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("#{}", i + 1), str::to_owned);
        let def = serde_json::from_value::<RawTool>(raw)
            .map_err(|e| e.to_string())
            .and_then(|raw| validate(raw, &env));
        match def {
            Ok(def)
                if reserved.contains(&def.name.as_str())
                    || defs.iter().any(|d| d.name == def.name) =>
            {
                problems.push(problem(&label, "the name is already taken".into()));
            }
            Ok(def) => defs.push(def),
            Err(e) => problems.push(problem(&label, e)),
        }
    }
    (defs, problems)
}

/// One tool given as JSON (a tool added from the chat, an import), checked
/// as the file's are; `env` looks up its credential.
pub(crate) fn parse_http(
    tool: Value,
    env: impl Fn(&str) -> Option<String>,
) -> Result<HttpToolDef, String> {
    let raw = serde_json::from_value::<RawTool>(tool).map_err(|e| e.to_string())?;
    validate(raw, &env)
}

fn validate(raw: RawTool, env: &impl Fn(&str) -> Option<String>) -> Result<HttpToolDef, String> {
    if !valid_tool_name(&raw.name) {
        return Err("name must be 1–64 lowercase letters, digits or underscores".into());
    }
    if raw.description.trim().is_empty() {
        return Err("description is empty".into());
    }
    let method = match raw.method.to_ascii_uppercase().as_str() {
        "GET" => reqwest::Method::GET,
        "POST" => reqwest::Method::POST,
        "PUT" => reqwest::Method::PUT,
        "PATCH" => reqwest::Method::PATCH,
        "DELETE" => reqwest::Method::DELETE,
        other => {
            return Err(format!(
                "method {other} is not GET, POST, PUT, PATCH or DELETE"
            ))
        }
    };
    let parameters = DeclaredSchema::parse(raw.parameters)?;
    let placeholders = placeholders(&raw.url)?;
    // The host is the operator's: the model fills in the path and query only.
    let probe = raw.url.replace(['{', '}'], "");
    let parsed = url::Url::parse(&probe).map_err(|e| format!("url is invalid: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("url must be http:// or https://".into());
    }
    let authority_end = raw.url.find("://").map_or(0, |i| i + 3);
    let authority = raw.url[authority_end..]
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    if authority.contains('{') {
        return Err("placeholders may not stand in the host or port".into());
    }
    if let Some(p) = placeholders
        .iter()
        .find(|p| !parameters.properties.contains(p))
    {
        return Err(format!(
            "url placeholder {{{p}}} is not among the parameters"
        ));
    }
    let auth = match raw.auth {
        None => None,
        Some(a) => {
            let place = match (a.header, a.query) {
                (Some(name), None) => AuthPlace::Header {
                    name,
                    prefix: a.prefix,
                },
                (None, Some(q)) => AuthPlace::Query(q),
                _ => return Err("auth needs exactly one of `header` or `query`".into()),
            };
            let value = env(&a.env)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| format!("auth variable {} is not set", a.env))?;
            Some((place, Secret::new(value)))
        }
    };
    let requires_approval = raw
        .requires_approval
        .unwrap_or(method != reqwest::Method::GET);
    Ok(HttpToolDef {
        name: raw.name,
        description: raw.description,
        method,
        url: raw.url,
        parameters,
        placeholders,
        auth,
        headers: raw.headers.into_iter().collect(),
        requires_approval,
        allow_private: raw.allow_private,
        timeout: Duration::from_secs(raw.timeout_secs.unwrap_or(30).clamp(1, 300)),
    })
}

/// `{name}` placeholders of a URL template.
fn placeholders(url: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = url;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let end = after.find('}').ok_or("url has an unclosed `{`")?;
        let name = &after[..end];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "url placeholder {{{name}}} is not a parameter name"
            ));
        }
        out.push(name.to_owned());
        rest = &after[end + 1..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(json: &str, env: &[(&str, &str)]) -> (Vec<HttpToolDef>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.json");
        std::fs::write(&path, json).unwrap();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let (defs, problems) = load_http_tools(&path, &["web_fetch"], |k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        });
        let problems = problems
            .into_iter()
            .map(|p| format!("{}: {}", p.tool, p.problem))
            .collect();
        (defs, problems)
    }

    #[test]
    fn a_good_definition_loads_with_defaults() {
        let (defs, problems) = load(
            r#"{"tools": [{
                "name": "weather", "description": "Weather for a city",
                "url": "https://api.example.com/v1/{city}/now",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "units": {"type": "string"}}, "required": ["city"]},
                "auth": {"env": "WEATHER_KEY", "header": "Authorization", "prefix": "Bearer "}
            }]}"#,
            &[("WEATHER_KEY", "k-123")],
        );
        assert!(problems.is_empty(), "{problems:?}");
        let d = &defs[0];
        assert_eq!(d.method, reqwest::Method::GET);
        assert!(!d.requires_approval, "GET reads");
        assert_eq!(d.placeholders, ["city"]);
        assert_eq!(d.parameters.required, ["city"]);
        assert!(
            !format!("{d:?}").contains("k-123"),
            "the credential is redacted"
        );
    }

    #[test]
    fn bad_definitions_are_skipped_with_the_reason() {
        let (defs, problems) = load(
            r#"{"tools": [
                {"name": "ok", "description": "d", "method": "post", "url": "http://x/y"},
                {"name": "web_fetch", "description": "d", "url": "http://x/"},
                {"name": "host", "description": "d", "url": "http://{h}/", "parameters": {"type": "object", "properties": {"h": {}}}},
                {"name": "undeclared", "description": "d", "url": "http://x/{id}"},
                {"name": "nokey", "description": "d", "url": "http://x/", "auth": {"env": "MISSING", "query": "key"}},
                {"name": "typo", "description": "d", "url": "http://x/", "metod": "GET"},
                {"name": "Bad-Name", "description": "d", "url": "http://x/"},
                {"name": "ftp", "description": "d", "url": "ftp://x/"}
            ]}"#,
            &[],
        );
        assert_eq!(defs.len(), 1);
        assert!(defs[0].requires_approval, "POST needs approval by default");
        let joined = problems.join("\n");
        for want in [
            "web_fetch: the name is already taken",
            "host: placeholders may not stand in the host",
            "undeclared: url placeholder {id} is not among the parameters",
            "nokey: auth variable MISSING is not set",
            "typo: unknown field `metod`",
            "Bad-Name: name must be",
            "ftp: url must be http",
        ] {
            assert!(joined.contains(want), "{want:?} not in:\n{joined}");
        }
    }

    #[test]
    fn an_unreadable_file_is_one_problem() {
        let (defs, problems) = load("{not json", &[]);
        assert!(defs.is_empty());
        assert!(
            problems[0].starts_with("*: not a {\"tools\": [...]} JSON file"),
            "{problems:?}"
        );
    }
}
