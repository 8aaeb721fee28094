//! exec_command: runs a shell command in the workspace, bounded in time and output.

use super::args::{parse_args, truncate_chars};
use super::exec_output::{OutputCapture, ProgressTracker};
use super::{Progress, Tool, ToolContext, ToolError, ToolSpec, Workspace};
use serde::Deserialize;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::time::{Instant, MissedTickBehavior};

/// The only environment variables a command sees; everything else (API keys, bot
/// tokens) is cleared.
pub const SAFE_ENV: [&str; 8] = [
    "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER", "TMPDIR",
];
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long output may keep flowing after the shell exits (from children it left
/// behind) before those are killed.
const LINGER: Duration = Duration::from_secs(2);
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
const READ_BUF: usize = 64 * 1024;

/// Limits for `exec_command`.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Commands run with this directory as cwd.
    pub workspace: Arc<Workspace>,
    /// Default timeout of a foreground call.
    pub timeout: Duration,
    /// Cap on a foreground call's `timeout_secs`.
    pub max_timeout: Duration,
    /// Default (and cap) for `background: true` calls.
    pub background_timeout: Duration,
    /// Output kept for the result (head + tail); the rest is counted and omitted.
    pub max_output_chars: usize,
}

impl ExecConfig {
    /// Defaults: 120 s timeout, 600 s max, 1 h in the background, 30,000 chars.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self {
            workspace,
            timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            background_timeout: Duration::from_secs(3600),
            max_output_chars: 30_000,
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
                "Run a shell command (`sh -c`) in the workspace directory (needs the user's \
                 approval). stdin is empty and only a minimal environment is passed (PATH, \
                 HOME, LANG, ...; no secrets). Returns the exit code, the duration and the \
                 combined stdout+stderr; output beyond {} chars keeps its beginning and end \
                 with a `[… N bytes omitted …]` marker, so filter noisy output (grep, tail). \
                 A non-zero exit code is reported, not raised. Timeout: {}s by default, \
                 `timeout_secs` up to {}s; on timeout the command and its children are killed. \
                 For long work (builds, downloads, test suites) set `background: true`: the \
                 call returns a task id at once, runs up to {}s, shows progress (the last \
                 output line and the last `N%` printed) and its result arrives later as a \
                 notification.",
                config.max_output_chars,
                config.timeout.as_secs(),
                config.max_timeout.as_secs(),
                config.background_timeout.as_secs()
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
        match self.check(args.clone()) {
            Ok((args, timeout)) => format!(
                "$ {}\n(cwd: {}, timeout: {}s{})",
                args.command,
                self.config.workspace.root().display(),
                timeout.as_secs(),
                if args.background { ", background" } else { "" }
            ),
            Err(e) => format!("exec_command (will be refused): {}", e.for_model()),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let (args, timeout) = self.check(args)?;
        run(&self.config, &args.command, timeout, ctx).await
    }
}

/// The allowlisted part of this process's environment.
fn safe_env() -> Vec<(&'static str, OsString)> {
    let mut env: Vec<_> = SAFE_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (*k, v)))
        .collect();
    if !env.iter().any(|(k, _)| *k == "PATH") {
        env.push(("PATH", DEFAULT_PATH.into()));
    }
    env
}

/// Kills the command's whole process group when dropped, unless disarmed; so a
/// dropped call future, a timeout or a cancellation leaves no process behind.
struct GroupKiller {
    pgid: Option<rustix::process::Pid>,
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (group already gone) is fine.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

enum Ending {
    /// Shell exited and the output pipes closed.
    Exited(ExitStatus),
    /// Shell exited but children kept the output open past [`LINGER`].
    Lingered(ExitStatus),
    TimedOut,
    Cancelled,
}

async fn run(
    config: &ExecConfig,
    command: &str,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(config.workspace.root())
        .env_clear()
        .envs(safe_env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::Failed {
            message: "could not start the command".into(),
            diagnostics: Some(e.to_string()),
        })?;
    let mut killer = GroupKiller {
        pgid: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw),
    };
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::failed("could not capture the command's output"));
    };

    let mut capture = OutputCapture::new(config.max_output_chars);
    let mut tracker = ProgressTracker::default();
    let report = |detail: String, percent: Option<u8>| {
        ctx.progress.report(Progress {
            stage: "running".into(),
            detail,
            percent,
        });
    };
    report(format!("$ {}", truncate_chars(command, 100)), None);

    let (mut out_buf, mut err_buf) = (vec![0u8; READ_BUF], vec![0u8; READ_BUF]);
    let (mut out_open, mut err_open) = (true, true);
    let mut status: Option<ExitStatus> = None;
    let deadline = tokio::time::sleep(timeout);
    let linger = tokio::time::sleep(timeout);
    tokio::pin!(deadline, linger);
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);

    let ending = loop {
        if let (Some(s), false, false) = (status, out_open, err_open) {
            break Ending::Exited(s);
        }
        tokio::select! {
            r = stdout.read(&mut out_buf), if out_open => match r {
                Ok(n) if n > 0 => {
                    capture.push(&out_buf[..n]);
                    tracker.push(&out_buf[..n]);
                }
                _ => out_open = false,
            },
            r = stderr.read(&mut err_buf), if err_open => match r {
                Ok(n) if n > 0 => {
                    capture.push(&err_buf[..n]);
                    tracker.push(&err_buf[..n]);
                }
                _ => err_open = false,
            },
            r = child.wait(), if status.is_none() => match r {
                Ok(s) => {
                    status = Some(s);
                    linger.as_mut().reset(Instant::now() + LINGER);
                }
                Err(e) => {
                    return Err(ToolError::Failed {
                        message: "lost track of the command".into(),
                        diagnostics: Some(e.to_string()),
                    })
                }
            },
            () = &mut linger, if status.is_some() => {
                if let Some(s) = status {
                    break Ending::Lingered(s);
                }
            }
            () = &mut deadline => break Ending::TimedOut,
            () = ctx.cancel.cancelled() => break Ending::Cancelled,
            _ = ticker.tick() => {
                if let Some((detail, percent)) = tracker.take_update() {
                    report(detail, percent);
                }
            }
        }
    };

    match ending {
        Ending::Exited(_) => killer.disarm(),
        _ => {
            killer.kill();
            if status.is_none() {
                // Reap the shell now that its group is dead.
                let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            }
        }
    }
    tracker.flush();
    let (detail, percent) = tracker.current();
    report(detail, percent);

    let output = render_output(&capture);
    let elapsed = started.elapsed();
    match ending {
        Ending::Cancelled => Err(ToolError::Cancelled),
        Ending::TimedOut => Err(ToolError::Failed {
            message: format!(
                "command timed out after {}s and was killed together with its child \
                 processes. Output so far:\n{output}\nIf it needs longer, pass a larger \
                 timeout_secs (up to {}s), or set background: true (up to {}s).",
                timeout.as_secs(),
                config.max_timeout.as_secs(),
                config.background_timeout.max(config.max_timeout).as_secs()
            ),
            diagnostics: None,
        }),
        Ending::Exited(s) => Ok(format_result(s, elapsed, &output, None)),
        Ending::Lingered(s) => Ok(format_result(
            s,
            elapsed,
            &output,
            Some(
                "processes started by the command kept its output open after the shell \
                 exited and were killed; redirect their output (e.g. `cmd > log 2>&1 &`) to \
                 keep them running",
            ),
        )),
    }
}

fn render_output(capture: &OutputCapture) -> String {
    if capture.total() == 0 {
        "(no output)".to_string()
    } else {
        capture.render()
    }
}

fn format_result(
    status: ExitStatus,
    elapsed: Duration,
    output: &str,
    note: Option<&str>,
) -> String {
    let outcome = match (status.code(), status.signal()) {
        (Some(0), _) => "exit code: 0".to_string(),
        (Some(code), _) => format!("exit code: {code} (the command failed)"),
        (None, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig)),
        (None, None) => "exit status unknown".to_string(),
    };
    let mut out = format!("{outcome}\nduration: {:.1}s\n", elapsed.as_secs_f64());
    if let Some(note) = note {
        out.push_str(&format!("note: {note}\n"));
    }
    out.push_str("output:\n");
    out.push_str(output);
    out
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        13 => " (SIGPIPE)",
        15 => " (SIGTERM)",
        _ => "",
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

    #[test]
    fn env_is_allowlisted() {
        let env = safe_env();
        assert!(env.iter().any(|(k, _)| *k == "PATH"));
        assert!(env.iter().all(|(k, _)| SAFE_ENV.contains(k)));
    }

    #[test]
    fn result_formatting() {
        let ok = format_result(
            ExitStatus::from_raw(0),
            Duration::from_millis(1500),
            "hi",
            None,
        );
        assert!(
            ok.starts_with("exit code: 0\nduration: 1.5s\noutput:\nhi"),
            "{ok}"
        );
        let failed = format_result(ExitStatus::from_raw(3 << 8), Duration::ZERO, "", None);
        assert!(
            failed.starts_with("exit code: 3 (the command failed)"),
            "{failed}"
        );
        let killed = format_result(ExitStatus::from_raw(9), Duration::ZERO, "", Some("n"));
        assert!(
            killed.starts_with("killed by signal 9 (SIGKILL)"),
            "{killed}"
        );
        assert!(killed.contains("note: n\n"), "{killed}");
    }
}
