//! `script_tool`: turn a script in the workspace into a tool (a manifest
//! like the operator's `SCRIPT_TOOLS_DIR` ones), after static checks, on a
//! card that shows the manifest, the script's first lines and its SHA-256.
//! The call names the hash it proposes, so what runs is what was shown; a
//! later change to the script needs a new card (`update`).

use super::guarded::resolve_command;
use super::http_manage::{storage, unwrap_params};
use super::script_check::inspect;
use super::script_precheck::precheck;
use super::{caller, GrownTools, ToolBuilders};
use crate::domain::Conversation;
use crate::store::GrownKind;
use crate::tools::script_defs::parse_script;
use crate::tools::{Tool, ToolContext, ToolError, ToolSpec, Workspace};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;

pub const SCRIPT_TOOL: &str = "script_tool";
/// Lines of the script a card shows.
const SHOWN_LINES: usize = 15;

pub struct ScriptToolManager {
    grown: Arc<GrownTools>,
    builders: ToolBuilders,
    spec: ToolSpec,
}

enum Change {
    Put {
        name: String,
        manifest: Value,
        program: PathBuf,
        sha256: String,
        /// The script's text, for the card.
        text: String,
    },
    Remove(String),
}

impl ScriptToolManager {
    pub fn new(grown: Arc<GrownTools>, builders: ToolBuilders) -> ScriptToolManager {
        let spec = ToolSpec {
            name: SCRIPT_TOOL.into(),
            display_name: "Script tool".into(),
            description: "Makes an executable script in the workspace a tool you can call (its \
                arguments arrive as one line of JSON on stdin), or updates or removes one. Only when \
                the user asks for it; the user approves it on a card showing the script and its \
                hash. Give `sha256`, the script's SHA-256: a call without it is answered with the \
                current one. A script that changes later stops running until updated the same way."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["add", "update", "remove"]},
                    "name": {"type": "string", "description": "the tool's name: lowercase letters, digits, _"},
                    "description": {"type": "string"},
                    "command": {"type": "string", "description": "the script's path in the workspace"},
                    "args": {"type": "array", "items": {"type": "string"}, "description": "fixed arguments"},
                    "parameters": {"type": "object", "description": "JSON Schema of the arguments object"},
                    "timeout_secs": {"type": "integer"},
                    "sha256": {"type": "string"}
                },
                "required": ["action", "name"]
            }),
            concurrency_safe: false,
            requires_approval: true,
            background: false,
            key_fields: Vec::new(),
        };
        ScriptToolManager {
            grown,
            builders,
            spec,
        }
    }

    /// The change `args` ask for, the script looked for in `ws` (the
    /// caller's view of the workspace).
    fn change(&self, args: &Value, ws: &Workspace) -> Result<Change, ToolError> {
        let args = unwrap_params(args);
        let name = args
            .get("name")
            .and_then(Value::as_str)
            .map(|n| n.trim().to_owned())
            .ok_or_else(|| invalid("`name` is required"))?;
        match args.get("action").and_then(Value::as_str) {
            Some("remove") => Ok(Change::Remove(name)),
            Some("add" | "update") => self.put(name, &args, ws),
            _ => Err(invalid("`action` must be add, update or remove")),
        }
    }

    fn put(
        &self,
        name: String,
        args: &Map<String, Value>,
        ws: &Workspace,
    ) -> Result<Change, ToolError> {
        let env = self.grown.env();
        if env.reserved.contains(&name) {
            return Err(invalid("the name belongs to a built-in or operator tool"));
        }
        let mut manifest = Map::new();
        for key in [
            "name",
            "description",
            "command",
            "args",
            "parameters",
            "timeout_secs",
        ] {
            if let Some(v) = args.get(key) {
                manifest.insert(key.into(), v.clone());
            }
        }
        let (resolved, program) =
            resolve_command(Value::Object(manifest.clone()), ws).map_err(|e| invalid(&e))?;
        let takes_input = !parse_script(resolved, ws.root())
            .map_err(|e| invalid(&e))?
            .parameters
            .properties
            .is_empty();
        // Kept relative to the whole workspace: the same script for every
        // process and caller, wherever the caller's folder is.
        let stored = program
            .strip_prefix(env.workspace.base())
            .unwrap_or(&program);
        manifest.insert(
            "command".into(),
            Value::String(stored.display().to_string()),
        );
        let manifest = Value::Object(manifest);
        let shown = ws.display(&program);
        let (sha256, text) = inspect(env.workspace.base(), &program)
            .and_then(|(sha256, text)| {
                precheck(&text, takes_input)?;
                Ok((sha256, text))
            })
            .map_err(|e| {
                ToolError::Forbidden(format!("the script {shown} cannot be a tool: {e}"))
            })?;
        match args.get("sha256").and_then(Value::as_str) {
            Some(given) if given.trim().eq_ignore_ascii_case(&sha256) => {}
            Some(given) => {
                return Err(invalid(&format!(
                    "`sha256` {given} is not the script's; {shown} now has sha256 {sha256} — check \
                     it is the content you mean, then pass that"
                )))
            }
            None => {
                return Err(invalid(&format!(
                    "give `sha256`: {shown} now has sha256 {sha256}"
                )))
            }
        }
        Ok(Change::Put {
            name,
            manifest,
            program,
            sha256,
            text,
        })
    }
}

fn invalid(why: &str) -> ToolError {
    ToolError::InvalidArguments(why.to_owned())
}

/// The script's first lines, for the card.
fn head(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines
        .iter()
        .take(SHOWN_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > SHOWN_LINES {
        out.push_str(&format!("\n… ({} more lines)", lines.len() - SHOWN_LINES));
    }
    out
}

#[async_trait::async_trait]
impl Tool for ScriptToolManager {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.validate_for(args, None)
    }

    fn validate_for(&self, args: &Value, caller: Option<&Conversation>) -> Result<(), ToolError> {
        let ws = self.grown.env().workspace.view(caller)?;
        self.change(args, &ws).map(drop)
    }

    async fn approval_summary(&self, args: &Value) -> String {
        self.approval_summary_for(args, None).await
    }

    async fn approval_summary_for(&self, args: &Value, caller: Option<&Conversation>) -> String {
        let _ = self.grown.refresh().await;
        let exists = |n: &str| self.grown.rows().iter().any(|r| r.name == n);
        let ws = match self.grown.env().workspace.view(caller) {
            Ok(ws) => ws,
            Err(e) => return ToolError::from(e).for_model(),
        };
        match self.change(args, &ws) {
            Ok(Change::Put {
                name,
                manifest,
                program,
                sha256,
                text,
            }) => format!(
                "{} script tool `{name}`: {}\nscript {} sha256 {sha256}:\n{}",
                if exists(&name) {
                    "Approve a new version of the"
                } else {
                    "Add the"
                },
                serde_json::to_string(&manifest).unwrap_or_default(),
                ws.display(&program),
                head(&text)
            ),
            Ok(Change::Remove(name)) => format!("Remove the tool `{name}` (added from the chat)"),
            Err(e) => e.for_model(),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let user = ctx.origin.as_ref().map(|o| &o.user);
        if !user.is_some_and(|u| self.builders.allows(u)) {
            return Err(ToolError::Forbidden(self.builders.refusal().into()));
        }
        // Checked again: the script may have changed while the card waited.
        let ws = self.grown.env().workspace.view(ctx.origin.as_ref())?;
        let change = self.change(&args, &ws)?;
        let store = self.grown.store();
        let by = caller(ctx);
        self.grown.refresh().await.map_err(storage)?;
        let rows = self.grown.rows();
        let text = match change {
            Change::Put {
                name,
                manifest,
                sha256,
                ..
            } => {
                if rows
                    .iter()
                    .any(|r| r.name == name && r.kind != GrownKind::Script)
                {
                    return Err(invalid(&format!("`{name}` is an HTTP tool; use http_tool")));
                }
                let adding =
                    unwrap_params(&args).get("action").and_then(Value::as_str) == Some("add");
                match rows.iter().any(|r| r.name == name) {
                    true if adding => {
                        return Err(invalid(&format!("`{name}` exists; use action \"update\"")))
                    }
                    false if !adding => {
                        return Err(invalid(&format!(
                            "no tool added from the chat is named `{name}`"
                        )))
                    }
                    _ => {}
                }
                store
                    .put_grown_tool(
                        &name,
                        GrownKind::Script,
                        &manifest.to_string(),
                        Some(&sha256),
                        &by,
                    )
                    .await
                    .map_err(storage)?;
                format!(
                    "Saved the script tool `{name}` (sha256 {}…); usable from now on. If the script \
                     changes, it stops until approved again.",
                    &sha256[..12]
                )
            }
            Change::Remove(name) => {
                if rows
                    .iter()
                    .any(|r| r.name == name && r.kind != GrownKind::Script)
                {
                    return Err(invalid(&format!("`{name}` is an HTTP tool; use http_tool")));
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
