//! What the exec sandbox adds to starting a command.
//!
//! `cargo bench --bench sandbox_spawn` (or `--profile dev` for a quick run)
//!
//! Each row runs `/bin/true` 200 times (the rows interleaved) and prints the
//! median and p99 of spawn-to-exit:
//! 1. a bare `tokio::process::Command` (no pre-exec work, so `posix_spawn`);
//! 2. `exec_command` with `EXEC_SANDBOX=none` (the real path: `sh -c`, output
//!    capture, limits and descriptor hygiene in the child);
//! 3. `exec_command` under Landlock (ruleset prepared per command: the
//!    allowed `/etc` files reopened, the system directories, `/proc` and
//!    devices opened at start, workspace, temp dir; the seccomp filter);
//! 4. the same with the gateway's ports kept out (the network allowed but
//!    two ports: a second Landlock ruleset of 65,534 port rules, built once,
//!    enforced by each command — the kernel copies its rules into the
//!    command's new domain);
//! 5. `exec_command` under bwrap (namespaces, mounts, the filter handed over);
//! 6. bwrap with the ports kept out (the ruleset of row 4 under bwrap).
//!
//! The sandbox's cost is a row minus row 2. A level this machine lacks is
//! reported as such.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchboard::tools::{
    ExecConfig, ExecTool, Limits, Network, Protected, Sandbox, SandboxConfig, SandboxMode, Tool,
    ToolContext, Workspace,
};

const RUNS: usize = 200;

fn report(name: &str, mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let (p50, p99) = (times[RUNS / 2], times[RUNS * 99 / 100]);
    println!("{name:<110} median {p50:>9.2?}  p99 {p99:>9.2?}");
    (p50, p99)
}

/// `exec_command` under `mode`, or `None` (said) when this machine lacks it.
fn exec_tool(
    name: &str,
    ws: &Arc<Workspace>,
    mode: SandboxMode,
    ports: &[u16],
) -> Option<(String, ExecTool)> {
    let config = SandboxConfig {
        mode,
        network: Network::Allow,
        limits: Limits::default(),
        protect: Protected {
            ports: ports.to_vec(),
            ..Protected::default()
        },
    };
    let sandbox = match Sandbox::detect(&config) {
        Ok(s) => s,
        Err(e) => {
            println!("{name:<34} unavailable here: {e}");
            return None;
        }
    };
    let label = format!("{name} ({})", sandbox.describe());
    let mut exec = ExecConfig::new(Arc::clone(ws));
    exec.sandbox = Arc::new(sandbox);
    Some((label, ExecTool::new(exec)))
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::new(dir.path()).unwrap());
    let kept: &[u16] = &[5432, 8080];
    let tools: Vec<(String, ExecTool)> = [
        ("exec_command, none", SandboxMode::None, &[][..]),
        ("exec_command, landlock", SandboxMode::Landlock, &[]),
        (
            "exec_command, landlock, ports kept",
            SandboxMode::Landlock,
            kept,
        ),
        ("exec_command, bwrap", SandboxMode::Bwrap, &[]),
        ("exec_command, bwrap, ports kept", SandboxMode::Bwrap, kept),
    ]
    .into_iter()
    .filter_map(|(name, mode, ports)| exec_tool(name, &ws, mode, ports))
    .collect();
    let ctx = ToolContext::default();
    let mut bare = Vec::with_capacity(RUNS);
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(RUNS); tools.len()];
    // Interleaved, so a burst of load on this shared machine hits every row alike.
    for _ in 0..RUNS {
        let start = Instant::now();
        let status = tokio::process::Command::new("/bin/true")
            .status()
            .await
            .unwrap();
        bare.push(start.elapsed());
        assert!(status.success());
        for ((_, tool), times) in tools.iter().zip(&mut times) {
            let start = Instant::now();
            let out = tool
                .call(json!({ "command": "/bin/true" }), &ctx)
                .await
                .unwrap();
            times.push(start.elapsed());
            assert!(out.starts_with("exit code: 0"), "{out}");
        }
    }
    report("bare tokio Command", bare);
    let mut rows = Vec::new();
    for ((label, _), times) in tools.iter().zip(times) {
        rows.push((label.clone(), report(label, times)));
    }
    if let Some((_, (p50, p99))) = rows.first() {
        for (label, (l50, l99)) in rows.iter().skip(1) {
            println!(
                "{label}: adds {:.2?} at p50, {:.2?} at p99 over unconfined",
                l50.saturating_sub(*p50),
                l99.saturating_sub(*p99)
            );
        }
    }
}
