//! A script tool added from the chat: the operator's kind of script tool,
//! bound to the script's content as approved. When the script changes it
//! stops running until a new `script_tool` card approves the new content.

use super::script_check::current_hash;
use super::GrownEnv;
use crate::domain::Conversation;
use crate::tools::script_defs::parse_script;
use crate::tools::{ScriptTool, Tool, ToolContext, ToolError, ToolSource, ToolSpec, Workspace};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) struct GuardedScript {
    inner: ScriptTool,
    program: PathBuf,
    /// The whole workspace's root, which the script is read from.
    base: PathBuf,
    /// The workspace-relative path, for messages.
    shown: String,
    approved: String,
}

impl GuardedScript {
    /// The tool a stored manifest declares, bound to `approved` (its hash).
    pub(crate) fn load(
        manifest: Value,
        approved: Option<&str>,
        env: &GrownEnv,
    ) -> Result<GuardedScript, String> {
        let approved = approved.ok_or("no approved script hash is stored")?;
        // Stored relative to the whole workspace (a user's folder included).
        let (manifest, program) = resolve_command(manifest, &env.workspace)?;
        let def = parse_script(manifest, env.workspace.root())?;
        Ok(GuardedScript {
            shown: env.workspace.display(&program),
            program,
            base: env.workspace.base().to_path_buf(),
            approved: approved.to_owned(),
            // It runs in each caller's own folder; of the folder it lives
            // in, callers see the script alone.
            inner: ScriptTool::new(
                def,
                Arc::clone(&env.workspace),
                env.max_output_chars,
                Arc::clone(&env.sandbox),
            )
            .reading_only_its_file(),
        })
    }

    /// Refuses when the script is not the one approved.
    fn unchanged(&self) -> Result<(), ToolError> {
        let now = current_hash(&self.base, &self.program).map_err(|e| {
            ToolError::failed(format!("the script {} cannot be used: {e}", self.shown))
        })?;
        if now == self.approved {
            return Ok(());
        }
        Err(ToolError::Forbidden(format!(
            "the script {} changed since it was approved (sha256 {}… → {}…), so it does not run; \
             to use the new version, call `script_tool` with action \"update\" and the same \
             manifest — the user approves the new content on a card",
            self.shown,
            &self.approved[..12],
            &now[..12]
        )))
    }
}

/// The manifest with its `command` resolved inside `ws` (the caller's view:
/// refused outside it, symlinks included), and that path.
pub(crate) fn resolve_command(
    mut manifest: Value,
    ws: &Workspace,
) -> Result<(Value, PathBuf), String> {
    let command = manifest
        .get("command")
        .and_then(Value::as_str)
        .ok_or("`command` (the script's path in the workspace) is missing")?;
    let program = ws.resolve(command).map_err(|e| e.to_string())?;
    if let Some(obj) = manifest.as_object_mut() {
        obj.insert(
            "command".into(),
            Value::String(program.display().to_string()),
        );
    }
    Ok((manifest, program))
}

#[async_trait::async_trait]
impl Tool for GuardedScript {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn source(&self) -> ToolSource {
        ToolSource::Grown
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.inner.validate(args)?;
        self.unchanged()
    }

    async fn approval_summary(&self, args: &Value) -> String {
        self.approval_summary_for(args, None).await
    }

    async fn approval_summary_for(&self, args: &Value, caller: Option<&Conversation>) -> String {
        format!(
            "{}\nscript {} sha256 {}…",
            self.inner.approval_summary_for(args, caller).await,
            self.shown,
            &self.approved[..12]
        )
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        // Again at the last moment: the card may have waited a while.
        self.unchanged()?;
        self.inner.call(args, ctx).await
    }
}
