//! A script tool: runs the operator's executable in the workspace with the
//! call's arguments as one line of JSON on stdin. It touches the machine, so
//! every call needs an approval (an "always" rule can cover it).

use super::process::{run_process, Launch};
use super::sandbox::Sandbox;
use super::script_defs::ScriptToolDef;
use super::{Tool, ToolContext, ToolError, ToolSpec, Workspace};
use crate::domain::Conversation;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

pub struct ScriptTool {
    def: ScriptToolDef,
    spec: ToolSpec,
    workspace: Arc<Workspace>,
    max_output_chars: usize,
    sandbox: Arc<Sandbox>,
    /// Only the script file is readable besides the caller's folder, not
    /// the directory it lives in (a script in a user's workspace folder).
    only_its_file: bool,
}

impl ScriptTool {
    pub fn new(
        def: ScriptToolDef,
        workspace: Arc<Workspace>,
        max_output_chars: usize,
        sandbox: Arc<Sandbox>,
    ) -> ScriptTool {
        let spec = ToolSpec {
            name: def.name.clone(),
            display_name: def.name.clone(),
            description: format!(
                "{}\n(A script run in the workspace with your arguments; needs the user's approval. \
                 Returns its exit code and output.)",
                def.description
            ),
            parameters: def.parameters.schema.clone(),
            concurrency_safe: false,
            requires_approval: true,
            background: false,
            key_fields: Vec::new(),
        };
        ScriptTool {
            def,
            spec,
            workspace,
            max_output_chars,
            sandbox,
            only_its_file: false,
        }
    }

    /// A script that lives in a user's workspace folder: another caller's
    /// command may read and run the script, never the rest of that folder.
    pub(crate) fn reading_only_its_file(mut self) -> ScriptTool {
        self.only_its_file = true;
        self
    }

    /// What the script may read besides the caller's folder: its own
    /// directory (its helpers, its data), or only itself.
    fn readable(&self) -> Vec<PathBuf> {
        let program = std::fs::canonicalize(&self.def.program).ok();
        let readable = if self.only_its_file {
            program
        } else {
            program.and_then(|p| p.parent().map(Into::into))
        };
        readable.into_iter().collect()
    }
}

#[async_trait::async_trait]
impl Tool for ScriptTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn source(&self) -> super::ToolSource {
        super::ToolSource::Script
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.def.parameters.check(args.clone()).map(drop)
    }

    async fn approval_summary(&self, args: &Value) -> String {
        self.approval_summary_for(args, None).await
    }

    async fn approval_summary_for(&self, args: &Value, caller: Option<&Conversation>) -> String {
        let cwd = match self.workspace.view(caller) {
            Ok(ws) => ws.root().display().to_string(),
            Err(e) => {
                let e = ToolError::from(e);
                return format!("{} (will be refused): {}", self.def.name, e.for_model());
            }
        };
        let mut line = self.def.program.display().to_string();
        for a in &self.def.args {
            line.push(' ');
            line.push_str(a);
        }
        format!(
            "$ {line}\nstdin: {}\n(cwd: {}, timeout: {}s)\n{}",
            args,
            cwd,
            self.def.timeout.as_secs(),
            self.sandbox.card_line()
        )
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args = self.def.parameters.check(args)?;
        let ws = self.workspace.view(ctx.origin.as_ref())?;
        let mut stdin = Value::Object(args).to_string().into_bytes();
        stdin.push(b'\n');
        let launch = Launch {
            program: self.def.program.clone().into_os_string(),
            args: self.def.args.iter().map(Into::into).collect(),
            stdin: Some(stdin),
            label: format!("{} running", self.def.name),
            what: "script",
            timeout_hint: "Its time limit is set by the operator (timeout_secs in its manifest)."
                .into(),
            readable: self.readable(),
        };
        run_process(
            &self.sandbox,
            &ws,
            self.max_output_chars,
            launch,
            self.def.timeout,
            ctx,
        )
        .await
    }
}
