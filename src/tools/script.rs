//! A script tool: runs the operator's executable in the workspace with the
//! call's arguments as one line of JSON on stdin. It touches the machine, so
//! every call needs an approval (an "always" rule can cover it).

use super::process::{run_process, Launch};
use super::sandbox::Sandbox;
use super::script_defs::ScriptToolDef;
use super::{Tool, ToolContext, ToolError, ToolSpec, Workspace};
use serde_json::Value;
use std::sync::Arc;

pub struct ScriptTool {
    def: ScriptToolDef,
    spec: ToolSpec,
    workspace: Arc<Workspace>,
    max_output_chars: usize,
    sandbox: Arc<Sandbox>,
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
        };
        ScriptTool {
            def,
            spec,
            workspace,
            max_output_chars,
            sandbox,
        }
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
        let mut line = self.def.program.display().to_string();
        for a in &self.def.args {
            line.push(' ');
            line.push_str(a);
        }
        format!(
            "$ {line}\nstdin: {}\n(cwd: {}, timeout: {}s)\n{}",
            args,
            self.workspace.root().display(),
            self.def.timeout.as_secs(),
            self.sandbox.card_line()
        )
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args = self.def.parameters.check(args)?;
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
            // The script's own directory (its helpers, its data), read-only.
            readable: std::fs::canonicalize(&self.def.program)
                .ok()
                .and_then(|p| p.parent().map(Into::into))
                .into_iter()
                .collect(),
        };
        run_process(
            &self.sandbox,
            self.workspace.root(),
            self.max_output_chars,
            launch,
            self.def.timeout,
            ctx,
        )
        .await
    }
}
