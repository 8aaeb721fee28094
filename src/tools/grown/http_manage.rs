//! `http_tool`: add, update, remove or import HTTP API tools from the chat.
//! Every call shows a card with what changes (allowed once or denied, never
//! by a rule); a credential is named by its `TOOL_SECRET_*` variable only.

use super::{caller, GrownTools, ToolBuilders, SECRET_PREFIX};
use crate::store::GrownKind;
use crate::tools::http_api_defs::{parse_http, AuthPlace, HttpToolDef};
use crate::tools::{Tool, ToolContext, ToolError, ToolSpec};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const HTTP_TOOL: &str = "http_tool";
/// Tools one import may bring.
const MAX_IMPORT: usize = 50;

pub struct HttpToolManager {
    grown: Arc<GrownTools>,
    builders: ToolBuilders,
    spec: ToolSpec,
}

enum Change {
    Put(Vec<(HttpToolDef, Value)>),
    Remove(String),
}

/// What the model is told the tool does.
const DESCRIPTION: &str =
    "Adds, updates, removes or imports an HTTP API tool that you can then call \
    like any other tool. Only when the user asks for it; the user approves every change \
    on a card. `tool` (for add/update) is {\"name\", \"description\", \"method\" (GET, \
    POST, PUT, PATCH, DELETE), \"url\" (https://…, with {param} placeholders in the \
    path or query), \"parameters\" (a JSON Schema object), optional \"auth\": {\"env\": \
    \"TOOL_SECRET_…\" (the name of the variable holding the key — never the key itself), \
    \"header\" or \"query\", \"prefix\"}, \"headers\", \"requires_approval\", \
    \"timeout_secs\"}. `tools` (for import) is the list of an export.";

impl HttpToolManager {
    pub fn new(grown: Arc<GrownTools>, builders: ToolBuilders) -> HttpToolManager {
        let spec = ToolSpec {
            name: HTTP_TOOL.into(),
            display_name: "HTTP tool".into(),
            description: DESCRIPTION.into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["add", "update", "remove", "import"]},
                    "tool": {"type": "object", "description": "the tool, for add and update"},
                    "name": {"type": "string", "description": "the tool to remove"},
                    "tools": {"type": "array", "items": {"type": "object"}, "description": "the tools to import"}
                },
                "required": ["action"]
            }),
            concurrency_safe: false,
            requires_approval: true,
            background: false,
            key_fields: Vec::new(),
        };
        HttpToolManager {
            grown,
            builders,
            spec,
        }
    }

    fn change(&self, args: &Value) -> Result<Change, ToolError> {
        let args = unwrap_params(args);
        let field = |k: &str| args.get(k);
        match field("action").and_then(Value::as_str) {
            Some("add" | "update") => {
                let tool = field("tool")
                    .filter(|t| t.is_object())
                    .ok_or_else(|| invalid("`tool` (an object) is required to add or update"))?;
                Ok(Change::Put(vec![self.checked(tool)?]))
            }
            Some("import") => {
                let tools = field("tools")
                    .and_then(Value::as_array)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| invalid("`tools` (a non-empty list) is required to import"))?;
                if tools.len() > MAX_IMPORT {
                    return Err(invalid(&format!("at most {MAX_IMPORT} tools at once")));
                }
                let mut out: Vec<(HttpToolDef, Value)> = Vec::new();
                for t in tools {
                    let (def, manifest) = self.checked(t)?;
                    if out.iter().any(|(d, _)| d.name == def.name) {
                        return Err(invalid(&format!("`{}` is listed twice", def.name)));
                    }
                    out.push((def, manifest));
                }
                Ok(Change::Put(out))
            }
            Some("remove") => field("name")
                .and_then(Value::as_str)
                .map(|n| Change::Remove(n.trim().to_owned()))
                .ok_or_else(|| invalid("`name` is required to remove")),
            _ => Err(invalid("`action` must be add, update, remove or import")),
        }
    }

    /// One tool checked as the operator's file is, plus what a tool from the
    /// chat may not do.
    fn checked(&self, tool: &Value) -> Result<(HttpToolDef, Value), ToolError> {
        let label = tool.get("name").and_then(Value::as_str).unwrap_or("?");
        let bad = |why: String| invalid(&format!("tool `{label}`: {why}"));
        if tool.get("allow_private").and_then(Value::as_bool) == Some(true) {
            return Err(bad(
                "`allow_private` is the operator's to set (WEB_FETCH_ALLOW); leave it out".into(),
            ));
        }
        if let Some(env) = tool.pointer("/auth/env").and_then(Value::as_str) {
            if !env.starts_with(SECRET_PREFIX) {
                return Err(bad(format!(
                    "a credential can only come from a variable named {SECRET_PREFIX}…, not {env}"
                )));
            }
        }
        let def = parse_http(tool.clone(), |k| self.grown.env().secret(k)).map_err(bad)?;
        if self.grown.env().reserved.contains(&def.name) {
            return Err(bad("the name belongs to a built-in or operator tool".into()));
        }
        Ok((def, tool.clone()))
    }
}

fn invalid(why: &str) -> ToolError {
    ToolError::InvalidArguments(why.to_owned())
}

/// Arguments wrapped as `{"params": {...}}` are taken as the inner object.
pub(crate) fn unwrap_params(args: &Value) -> Map<String, Value> {
    match args {
        Value::Object(m) if m.len() == 1 => match m.get("params") {
            Some(Value::Object(inner)) => inner.clone(),
            _ => m.clone(),
        },
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    }
}

/// The lines a card shows for one tool.
fn describe(def: &HttpToolDef, replaces: bool) -> String {
    let params: Vec<String> = def
        .parameters
        .properties
        .iter()
        .map(|p| {
            let star = if def.parameters.required.contains(p) {
                "*"
            } else {
                ""
            };
            format!("{p}{star}")
        })
        .collect();
    let credential = match &def.auth {
        None => "none".to_owned(),
        Some((AuthPlace::Header { name, .. }, _)) => format!("in the {name} header"),
        Some((AuthPlace::Query(q), _)) => format!("as the `{q}` query parameter"),
    };
    format!(
        "{} HTTP tool `{}`: {} {}\n  {}\n  parameters: {}\n  credential: {credential}\n  its calls ask for approval: {}",
        if replaces { "Replace" } else { "Add" },
        def.name,
        def.method,
        def.url,
        def.description,
        if params.is_empty() { "none".into() } else { params.join(", ") },
        if def.requires_approval { "yes" } else { "no" }
    )
}

#[async_trait::async_trait]
impl Tool for HttpToolManager {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.change(args).map(drop)
    }

    async fn approval_summary(&self, args: &Value) -> String {
        let _ = self.grown.refresh().await;
        let rows = self.grown.rows();
        let exists = |n: &str| rows.iter().any(|r| r.name == n);
        match self.change(args) {
            Ok(Change::Put(tools)) => tools
                .iter()
                .map(|(def, _)| describe(def, exists(&def.name)))
                .collect::<Vec<_>>()
                .join("\n"),
            Ok(Change::Remove(name)) => format!("Remove the tool `{name}` (added from the chat)"),
            Err(e) => e.for_model(),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let user = ctx.origin.as_ref().map(|o| &o.user);
        if !user.is_some_and(|u| self.builders.allows(u)) {
            return Err(ToolError::Forbidden(self.builders.refusal().into()));
        }
        let change = self.change(&args)?;
        let store = self.grown.store();
        let by = caller(ctx);
        self.grown.refresh().await.map_err(storage)?;
        let rows = self.grown.rows();
        let action = unwrap_params(&args)
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let text = match change {
            Change::Put(tools) => {
                for (def, _) in &tools {
                    match rows.iter().find(|r| r.name == def.name) {
                        Some(r) if r.kind != GrownKind::Http => {
                            return Err(invalid(&format!(
                                "`{}` is a script tool; use script_tool",
                                def.name
                            )))
                        }
                        Some(_) if action == "add" => {
                            return Err(invalid(&format!(
                                "`{}` exists; use action \"update\"",
                                def.name
                            )))
                        }
                        None if action == "update" => {
                            return Err(invalid(&format!(
                                "no tool added from the chat is named `{}`",
                                def.name
                            )))
                        }
                        _ => {}
                    }
                }
                let mut names = Vec::new();
                for (def, manifest) in &tools {
                    store
                        .put_grown_tool(
                            &def.name,
                            GrownKind::Http,
                            &manifest.to_string(),
                            None,
                            &by,
                        )
                        .await
                        .map_err(storage)?;
                    names.push(format!("`{}`", def.name));
                }
                format!("Saved {}; usable from now on.", names.join(", "))
            }
            Change::Remove(name) => {
                if rows
                    .iter()
                    .any(|r| r.name == name && r.kind != GrownKind::Http)
                {
                    return Err(invalid(&format!(
                        "`{name}` is a script tool; use script_tool"
                    )));
                }
                if !store.remove_grown_tool(&name, &by).await.map_err(storage)? {
                    return Err(invalid(&format!(
                        "no tool added from the chat is named `{name}`"
                    )));
                }
                format!("Removed `{name}`.")
            }
        };
        self.grown.refresh().await.map_err(storage)?;
        Ok(text)
    }
}

pub(crate) fn storage(e: crate::store::StoreError) -> ToolError {
    ToolError::Failed {
        message: "the tool list could not be saved (storage unavailable); nothing changed".into(),
        diagnostics: Some(e.to_string()),
    }
}
