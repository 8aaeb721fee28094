//! exec_command: runs a shell command in the workspace, bounded in time and output.

use super::args::parse_args;
use super::process::{run_process, Launch};
use super::sandbox::Sandbox;
use super::{Tool, ToolContext, ToolError, ToolSpec, Workspace};
use crate::domain::Conversation;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Limits for `exec_command`.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Commands run in the caller's part of it (a chat user's own folder)
    /// as cwd, and see only that part.
    pub workspace: Arc<Workspace>,
    /// Default timeout of a foreground call.
    pub timeout: Duration,
    /// Cap on a foreground call's `timeout_secs`.
    pub max_timeout: Duration,
    /// Default (and cap) for `background: true` calls.
    pub background_timeout: Duration,
    /// Output kept for the result (head + tail); the rest is counted and omitted.
    pub max_output_chars: usize,
    /// The confinement commands run under.
    pub sandbox: Arc<Sandbox>,
}

impl ExecConfig {
    /// Defaults: 120 s timeout, 600 s max, 1 h in the background, 30,000
    /// chars, the strongest sandbox available ([`Sandbox::auto`]).
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self {
            workspace,
            timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            background_timeout: Duration::from_secs(3600),
            max_output_chars: 30_000,
            sandbox: Arc::new(Sandbox::auto()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecArgs {
    command: String,
    timeout_secs: Option<u64>,
    #[serde(default)]
    background: bool,
    /// Read by the task manager; checked here.
    #[serde(default)]
    notify: Option<String>,
}

/// `exec_command`: `sh -c <command>` in the workspace (approval).
pub struct ExecTool {
    config: ExecConfig,
    spec: ToolSpec,
}

impl ExecTool {
    pub fn new(config: ExecConfig) -> Self {
        let spec = ToolSpec {
            name: "exec_command".into(),
            display_name: "Run command".into(),
            description: format!(
                "Run a shell command (`sh -c`) in the workspace directory — in a chat user's \
                 turns that user's own folder, and the command sees nothing else of the \
                 workspace (needs the user's approval). stdin is empty and only a minimal \
                 environment is passed (PATH, HOME, LANG, ...; no secrets). Returns the exit code, the duration and the \
                 combined stdout+stderr; output beyond {} chars keeps its beginning and end \
                 with a `[… N bytes omitted …]` marker, so filter noisy output (grep, tail). \
                 A non-zero exit code is reported, not raised. Timeout: {}s by default, \
                 `timeout_secs` up to {}s; on timeout the command and its children are killed. \
                 For long work (builds, downloads, test suites) set `background: true`: the \
                 call returns a task id at once, runs up to {}s, shows progress (the last \
                 output line and the last `N%` printed) and its result arrives later as a \
                 notification. {}",
                config.max_output_chars,
                config.timeout.as_secs(),
                config.max_timeout.as_secs(),
                config.background_timeout.as_secs(),
                config.sandbox.model_note()
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Shell command line, run with `sh -c` in the workspace directory."},
                    "timeout_secs": {"type": "integer", "minimum": 1, "description": "Kill the command after this many seconds."},
                    "background": {"type": "boolean", "description": "Run as a background task and report the result later. Default false."},
                    "notify": {"type": "string", "enum": ["done", "changes", "silent"], "description": "For background tasks: `done` (default) tells the user when it ends; `changes` also posts each quarter of progress; `silent` says nothing (check it with check_background_tasks)."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
            concurrency_safe: false,
            requires_approval: true,
            background: false,
            key_fields: Vec::new(),
        };
        Self { config, spec }
    }

    fn check(&self, args: Value) -> Result<(ExecArgs, Duration), ToolError> {
        let args: ExecArgs = parse_args("exec_command", args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments("command is empty".into()));
        }
        if args.command.contains('\0') {
            return Err(ToolError::InvalidArguments(
                "command contains a NUL byte".into(),
            ));
        }
        match args.notify.as_deref() {
            None => {}
            Some("done" | "changes" | "silent") if args.background => {}
            Some("done" | "changes" | "silent") => {
                return Err(ToolError::InvalidArguments(
                    "notify applies to background tasks only".into(),
                ))
            }
            Some(other) => {
                return Err(ToolError::InvalidArguments(format!(
                    "notify must be done, changes or silent, not {other:?}"
                )))
            }
        }
        if args.timeout_secs == Some(0) {
            return Err(ToolError::InvalidArguments(
                "timeout_secs must be at least 1".into(),
            ));
        }
        let c = &self.config;
        let (default, cap) = if args.background {
            (
                c.background_timeout,
                c.background_timeout.max(c.max_timeout),
            )
        } else {
            (c.timeout, c.max_timeout)
        };
        let timeout = args
            .timeout_secs
            .map_or(default, Duration::from_secs)
            .min(cap);
        Ok((args, timeout))
    }
}

#[async_trait::async_trait]
impl Tool for ExecTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.check(args.clone()).map(drop)
    }

    fn runs_in_background(&self, args: &Value) -> bool {
        args.get("background").and_then(Value::as_bool) == Some(true)
    }

    async fn approval_summary(&self, args: &Value) -> String {
        self.approval_summary_for(args, None).await
    }

    async fn approval_summary_for(&self, args: &Value, caller: Option<&Conversation>) -> String {
        let checked = self
            .config
            .workspace
            .view(caller)
            .map_err(ToolError::from)
            .and_then(|ws| self.check(args.clone()).map(|ok| (ws, ok)));
        match checked {
            Ok((ws, (args, timeout))) => format!(
                "$ {}\n(cwd: {}, timeout: {}s{})\n{}",
                args.command,
                ws.root().display(),
                timeout.as_secs(),
                if args.background { ", background" } else { "" },
                self.config.sandbox.card_line()
            ),
            Err(e) => format!("exec_command (will be refused): {}", e.for_model()),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let (args, timeout) = self.check(args)?;
        let c = &self.config;
        let ws = c.workspace.view(ctx.origin.as_ref())?;
        let launch = Launch {
            program: "sh".into(),
            args: vec!["-c".into(), args.command.clone().into()],
            stdin: None,
            // Shown in the chat's progress line: escaped like the card was.
            label: format!(
                "$ {}",
                crate::text::clip(&crate::visible::visible_command(&args.command).text, 100)
            ),
            what: "command",
            timeout_hint: format!(
                "If it needs longer, pass a larger timeout_secs (up to {}s), or set background: \
                 true (up to {}s).",
                c.max_timeout.as_secs(),
                c.background_timeout.max(c.max_timeout).as_secs()
            ),
            readable: Vec::new(),
        };
        run_process(&c.sandbox, &ws, c.max_output_chars, launch, timeout, ctx).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tool(dir: &std::path::Path) -> ExecTool {
        let ws = Arc::new(Workspace::new(dir).unwrap());
        ExecTool::new(ExecConfig::new(ws))
    }

    #[test]
    fn timeouts_are_defaulted_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let t = tool(dir.path());
        let secs = |v: Value| t.check(v).unwrap().1.as_secs();
        assert_eq!(secs(json!({"command": "x"})), 120);
        assert_eq!(secs(json!({"command": "x", "timeout_secs": 5})), 5);
        assert_eq!(secs(json!({"command": "x", "timeout_secs": 99999})), 600);
        assert_eq!(secs(json!({"command": "x", "background": true})), 3600);
        assert_eq!(
            secs(json!({"command": "x", "background": true, "timeout_secs": 99999})),
            3600
        );
        assert!(t.check(json!({"command": "x", "timeout_secs": 0})).is_err());
        assert!(t.check(json!({"command": " "})).is_err());
        assert!(t.check(json!({"cmd": "x"})).is_err());
    }

    #[test]
    fn background_flag_is_per_call() {
        let dir = tempfile::tempdir().unwrap();
        let t = tool(dir.path());
        assert!(t.runs_in_background(&json!({"command": "x", "background": true})));
        assert!(!t.runs_in_background(&json!({"command": "x"})));
        assert!(!t.spec().background);
        assert!(t.spec().requires_approval);
    }
}
