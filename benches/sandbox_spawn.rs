//! What the exec sandbox adds to starting a command.
//!
//! `cargo bench --bench sandbox_spawn` (or `--profile dev` for a quick run)
//!
//! Each row runs `/bin/true` 200 times and prints the median and p99 of
//! spawn-to-exit:
//! 1. a bare `tokio::process::Command` (no pre-exec work, so `posix_spawn`);
//! 2. `exec_command` with `EXEC_SANDBOX=none` (the real path: `sh -c`, output
//!    capture, limits and descriptor hygiene in the child);
//! 3. `exec_command` under Landlock (ruleset prepared per command: ~100
//!    path descriptors for `/etc`, the system directories, workspace, temp dir);
//! 4. `exec_command` under bwrap (namespaces, mounts).
//!
//! The sandbox's cost is row 3 or 4 minus row 2. A level this machine lacks
//! is reported as such.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchboard::tools::{
    ExecConfig, ExecTool, Limits, Network, Sandbox, SandboxConfig, SandboxMode, Tool, ToolContext,
    Workspace,
};

const RUNS: usize = 200;

fn report(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let (p50, p99) = (times[RUNS / 2], times[RUNS * 99 / 100]);
    println!("{name:<34} median {p50:>9.2?}  p99 {p99:>9.2?}");
    p99
}

async fn exec_row(name: &str, ws: &Arc<Workspace>, mode: SandboxMode) -> Option<Duration> {
    let config = SandboxConfig {
        mode,
        network: Network::Allow,
        limits: Limits::default(),
    };
    let sandbox = match Sandbox::detect(&config) {
        Ok(s) => s,
        Err(e) => {
            println!("{name:<34} unavailable here: {e}");
            return None;
        }
    };
    let described = sandbox.describe();
    let mut exec = ExecConfig::new(Arc::clone(ws));
    exec.sandbox = Arc::new(sandbox);
    let tool = ExecTool::new(exec);
    let ctx = ToolContext::default();
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let out = tool
            .call(json!({ "command": "/bin/true" }), &ctx)
            .await
            .unwrap();
        times.push(start.elapsed());
        assert!(out.starts_with("exit code: 0"), "{out}");
    }
    Some(report(&format!("{name} ({described})"), times))
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path()).unwrap());
    let mut bare = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let status = tokio::process::Command::new("/bin/true")
            .status()
            .await
            .unwrap();
        bare.push(start.elapsed());
        assert!(status.success());
    }
    report("bare tokio Command", bare);
    let none = exec_row("exec_command, none", &ws, SandboxMode::None).await;
    let landlock = exec_row("exec_command, landlock", &ws, SandboxMode::Landlock).await;
    let bwrap = exec_row("exec_command, bwrap", &ws, SandboxMode::Bwrap).await;
    if let Some(none) = none {
        for (name, p99) in [("landlock", landlock), ("bwrap", bwrap)] {
            if let Some(p99) = p99 {
                println!(
                    "{name} adds {:.2?} at p99 over unconfined",
                    p99.saturating_sub(none)
                );
            }
        }
    }
}
