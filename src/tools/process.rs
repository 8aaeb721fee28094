//! Running a program in the workspace for a tool: inside the sandbox, with a
//! minimal environment, its own process group (killed as a whole on timeout, cancellation or drop),
//! output captured head-and-tail with progress from its last lines, and a
//! result that states the exit code. Shared by `exec_command` and script tools.

use super::exec_output::{OutputCapture, ProgressTracker};
use super::exec_quota::{OverQuota, QuotaWatch};
use super::sandbox::{Confined, Sandbox};
use super::{Progress, ToolContext, ToolError, Workspace};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, MissedTickBehavior};

/// The only environment variables a command sees; everything else (API keys, bot
/// tokens) is cleared.
pub const SAFE_ENV: [&str; 8] = [
    "PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ", "USER", "TMPDIR",
];
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long output may keep flowing after the program exits (from children it
/// left behind) before those are killed.
const LINGER: Duration = Duration::from_secs(2);
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
const READ_BUF: usize = 64 * 1024;

/// What to run.
pub(crate) struct Launch {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Written to the program's stdin, which is then closed (`None`: empty stdin).
    pub stdin: Option<Vec<u8>>,
    /// Shown as the progress detail until the program prints something.
    pub label: String,
    /// "command", "script": how messages name it.
    pub what: &'static str,
    /// Appended to the timeout error: how to get more time.
    pub timeout_hint: String,
    /// Paths outside the workspace the program may read and execute (a
    /// script's own directory).
    pub readable: Vec<PathBuf>,
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

/// Kills the command's whole process group and process tree when dropped,
/// unless disarmed; so a dropped call future, a timeout or a cancellation
/// leaves no process behind, not even one that started a session of its own.
struct GroupKiller {
    pgid: Option<rustix::process::Pid>,
    /// The command's process has not been reaped, so its pid still names it
    /// (a zombie at worst) and its tree can be walked.
    unreaped: bool,
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // The command's process leads the group: its tree first (stopped,
            // then killed), then whatever is left in the group. Once reaped,
            // its pid may name an unrelated process: the group only.
            if self.unreaped {
                super::process_tree::kill_tree(pgid.as_raw_nonzero().get());
            }
            // ESRCH (group already gone) is fine.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }

    fn reaped(&mut self) {
        self.unreaped = false;
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
    /// The caller's workspace folder grew past its quota.
    OverQuota(OverQuota),
}

/// Runs `launch` in `ws` (the caller's view of the workspace: its root is
/// the cwd and all of the workspace the sandbox lets the program see)
/// confined by `sandbox`; stopped when `ws` has a quota and grows past it.
pub(crate) async fn run_process(
    sandbox: &Sandbox,
    ws: &Workspace,
    max_output_chars: usize,
    mut launch: Launch,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let started = Instant::now();
    let what = launch.what;
    let quota = QuotaWatch::start(ws).await;
    let mut running = spawn(sandbox, ws.root(), &mut launch)?;
    let mut seen = Seen {
        capture: OutputCapture::new(max_output_chars),
        tracker: ProgressTracker::default(),
        ctx,
    };
    seen.report(launch.label.clone(), None);
    let ending = running.watch(&mut seen, timeout, what, quota).await?;
    running.settle(&ending).await;
    seen.tracker.flush();
    let (detail, percent) = seen.tracker.current();
    seen.report(detail, percent);

    let output = render_output(&seen.capture);
    let elapsed = started.elapsed();
    match ending {
        Ending::Cancelled => Err(ToolError::Cancelled),
        Ending::TimedOut => Err(ToolError::Failed {
            message: format!(
                "{what} timed out after {}s and was killed together with its child \
                 processes. Output so far:\n{output}\n{}",
                timeout.as_secs(),
                launch.timeout_hint
            ),
            diagnostics: None,
        }),
        Ending::OverQuota(over) => Err(ToolError::Failed {
            message: format!(
                "{what} was stopped: your workspace folder grew to {}. What it wrote so far is \
                 kept; delete what is not needed (`du -sh *` finds the large files) before \
                 writing more. Output so far:\n{output}",
                crate::workspace::quota::over_text(over.total, over.quota)
            ),
            diagnostics: None,
        }),
        Ending::Exited(s) => Ok(format_result(what, s, elapsed, &output, None)),
        Ending::Lingered(s) => Ok(format_result(
            what,
            s,
            elapsed,
            &output,
            Some(
                "processes started by the program kept its output open after it \
                 exited and were killed; redirect their output (e.g. `cmd > log 2>&1 &`) to \
                 keep them running",
            ),
        )),
    }
}

/// A started program: the process, its output pipes and the killer of its
/// process group.
struct Running {
    child: tokio::process::Child,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
    killer: GroupKiller,
    /// Its exit status, once reaped.
    status: Option<ExitStatus>,
    /// The sandbox's hold on the private temp dir, removed when the program
    /// is done (dropped after the killer: its processes are gone by then).
    _confined: Confined,
}

/// What the program printed so far, and the progress read from it.
struct Seen<'a> {
    capture: OutputCapture,
    tracker: ProgressTracker,
    ctx: &'a ToolContext,
}

impl Seen<'_> {
    fn push(&mut self, bytes: &[u8]) {
        self.capture.push(bytes);
        self.tracker.push(bytes);
    }

    fn report(&self, detail: String, percent: Option<u8>) {
        self.ctx.progress.report(Progress {
            stage: "running".into(),
            detail,
            percent,
        });
    }
}

/// Starts the program in its sandbox, in a process group of its own, with
/// the allowlisted environment (confined: the private temp dir as `HOME`
/// and `TMPDIR`) and its stdin written on a task of its own.
fn spawn(sandbox: &Sandbox, cwd: &Path, launch: &mut Launch) -> Result<Running, ToolError> {
    let what = launch.what;
    let mut confined = sandbox
        .command(&launch.program, &launch.args, cwd, &launch.readable)
        .map_err(|e| ToolError::Failed {
            message: format!("could not start the {what} in its sandbox"),
            diagnostics: Some(e.to_string()),
        })?;
    let mut env = safe_env();
    // Confined, the real home is out of reach: programs that keep caches or
    // settings there get the private temp dir instead.
    if let Some(tmp) = &confined.tmpdir {
        env.retain(|(k, _)| !matches!(*k, "TMPDIR" | "HOME"));
        env.push(("TMPDIR", tmp.clone().into_os_string()));
        env.push(("HOME", tmp.clone().into_os_string()));
    }
    let mut child = confined
        .command
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(if launch.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::Failed {
            message: format!("could not start the {what}"),
            diagnostics: Some(e.to_string()),
        })?;
    // Written on its own task: a program that prints before reading all of
    // its input must not deadlock against us.
    if let (Some(input), Some(mut pipe)) = (launch.stdin.take(), child.stdin.take()) {
        tokio::spawn(async move {
            let _ = pipe.write_all(&input).await;
        });
    }
    let killer = GroupKiller {
        pgid: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw),
        unreaped: true,
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::failed(format!(
            "could not capture the {what}'s output"
        )));
    };
    Ok(Running {
        child,
        stdout,
        stderr,
        killer,
        status: None,
        _confined: confined,
    })
}

impl Running {
    /// Reads the output until the program exits and its pipes close, its
    /// descendants keep them open [`LINGER`] past its exit, the timeout
    /// passes, the call is cancelled or its folder grows past its `quota`;
    /// progress every [`PROGRESS_EVERY`].
    async fn watch(
        &mut self,
        seen: &mut Seen<'_>,
        timeout: Duration,
        what: &str,
        mut quota: Option<QuotaWatch>,
    ) -> Result<Ending, ToolError> {
        let cancel = &seen.ctx.cancel;
        let (mut out_buf, mut err_buf) = (vec![0u8; READ_BUF], vec![0u8; READ_BUF]);
        let (mut out_open, mut err_open) = (true, true);
        let deadline = tokio::time::sleep(timeout);
        let linger = tokio::time::sleep(timeout);
        tokio::pin!(deadline, linger);
        let mut ticker = tokio::time::interval(PROGRESS_EVERY);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        loop {
            if let (Some(s), false, false) = (self.status, out_open, err_open) {
                return Ok(Ending::Exited(s));
            }
            tokio::select! {
                r = self.stdout.read(&mut out_buf), if out_open => match r {
                    Ok(n) if n > 0 => seen.push(&out_buf[..n]),
                    _ => out_open = false,
                },
                r = self.stderr.read(&mut err_buf), if err_open => match r {
                    Ok(n) if n > 0 => seen.push(&err_buf[..n]),
                    _ => err_open = false,
                },
                r = self.child.wait(), if self.status.is_none() => match r {
                    Ok(s) => {
                        self.killer.reaped();
                        self.status = Some(s);
                        linger.as_mut().reset(Instant::now() + LINGER);
                    }
                    Err(e) => {
                        return Err(ToolError::Failed {
                            message: format!("lost track of the {what}"),
                            diagnostics: Some(e.to_string()),
                        })
                    }
                },
                () = &mut linger, if self.status.is_some() => {
                    if let Some(s) = self.status {
                        return Ok(Ending::Lingered(s));
                    }
                }
                () = &mut deadline => return Ok(Ending::TimedOut),
                () = cancel.cancelled() => return Ok(Ending::Cancelled),
                over = QuotaWatch::over(quota.as_mut()) => return Ok(Ending::OverQuota(over)),
                _ = ticker.tick() => {
                    if let Some((detail, percent)) = seen.tracker.take_update() {
                        seen.report(detail, percent);
                    }
                }
            }
        }
    }

    /// After `ending`: a program that ended on its own keeps nothing to
    /// kill; otherwise its group and tree are killed and it is reaped.
    async fn settle(&mut self, ending: &Ending) {
        if let Ending::Exited(_) = ending {
            return self.killer.disarm();
        }
        self.killer.kill();
        if self.status.is_none() {
            // Reap the shell now that its group is dead.
            let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        }
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
    what: &str,
    status: ExitStatus,
    elapsed: Duration,
    output: &str,
    note: Option<&str>,
) -> String {
    let outcome = match (status.code(), status.signal()) {
        (Some(0), _) => "exit code: 0".to_string(),
        (Some(code), _) => format!("exit code: {code} (the {what} failed)"),
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

    #[test]
    fn env_is_allowlisted() {
        let env = safe_env();
        assert!(env.iter().any(|(k, _)| *k == "PATH"));
        assert!(env.iter().all(|(k, _)| SAFE_ENV.contains(k)));
    }

    #[test]
    fn result_formatting() {
        let ok = format_result(
            "command",
            ExitStatus::from_raw(0),
            Duration::from_millis(1500),
            "hi",
            None,
        );
        assert!(
            ok.starts_with("exit code: 0\nduration: 1.5s\noutput:\nhi"),
            "{ok}"
        );
        let failed = format_result(
            "command",
            ExitStatus::from_raw(3 << 8),
            Duration::ZERO,
            "",
            None,
        );
        assert!(
            failed.starts_with("exit code: 3 (the command failed)"),
            "{failed}"
        );
        let killed = format_result(
            "command",
            ExitStatus::from_raw(9),
            Duration::ZERO,
            "",
            Some("n"),
        );
        assert!(
            killed.starts_with("killed by signal 9 (SIGKILL)"),
            "{killed}"
        );
        assert!(killed.contains("note: n\n"), "{killed}");
    }
}
