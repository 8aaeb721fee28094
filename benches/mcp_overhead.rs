//! What the MCP client adds to a tool call, and what attached servers cost
//! the gateway.
//!
//! `cargo bench --bench mcp_overhead` (or `--profile dev` for a quick run;
//! the MCP test servers are installed on first use, as the tests do)
//!
//! 1. For each server — the Python SDK server's `lookup` over stdio,
//!    server-everything's `echo` over stdio and over Streamable HTTP — 500
//!    calls through the rmcp peer directly (the server's own time plus the
//!    transport) and 500 through `McpTool::call` (what the agent runs: the
//!    state lookup, the timeout and cancellation race, the observation), the
//!    rows interleaved; median and p99 of each. The gateway's overhead is the
//!    second minus the first.
//! 2. The gateway's RSS before and after attaching 5 stdio servers (measured
//!    first, on a fresh process).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rmcp::model::CallToolRequestParams;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use switchboard::mcp::{load_mcp_servers, McpClients};
use switchboard::tools::ToolContext;
use tokio_util::sync::CancellationToken;

const RUNS: usize = 500;

#[path = "../tests/support/deps.rs"]
#[allow(dead_code)]
mod deps;

fn quantiles(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[times.len() * 99 / 100])
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn clients(servers: Value) -> (McpClients, CancellationToken) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    let (defs, problems) = load_mcp_servers(&path, |k| std::env::var(k).ok());
    assert!(problems.is_empty(), "{problems:?}");
    let shutdown = CancellationToken::new();
    let ctx = switchboard::mcp::McpContext {
        // Outlives `dir`: the servers write in it while the bench runs.
        data_dir: std::env::temp_dir().join("switchboard-mcp-bench"),
        ..switchboard::mcp::McpContext::default()
    };
    let clients = McpClients::start(&defs, ctx, &shutdown).await;
    (clients, shutdown)
}

async fn measure(label: &str, servers: Value, tool_name: &str, remote: &str, args: Value) {
    let (clients, shutdown) = clients(servers).await;
    let state = clients.servers()[0].state();
    let Some(peer) = state.peer else {
        println!("{label:<44} down: {:?}", state.last_error);
        return;
    };
    let tool = clients
        .tools(&[])
        .into_iter()
        .find(|t| t.spec().name == tool_name)
        .unwrap();
    let ctx = ToolContext::default();
    let Value::Object(map) = args.clone() else {
        unreachable!()
    };
    // Warm up both paths.
    for _ in 0..20 {
        tool.call(args.clone(), &ctx).await.unwrap();
    }
    let (mut raw, mut ours) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    for _ in 0..RUNS {
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(map.clone());
        let t = Instant::now();
        peer.call_tool(params).await.unwrap();
        raw.push(t.elapsed());
        let t = Instant::now();
        tool.call(args.clone(), &ctx).await.unwrap();
        ours.push(t.elapsed());
    }
    let (r50, r99) = quantiles(raw);
    let (o50, o99) = quantiles(ours);
    println!(
        "{label:<44} peer p50 {r50:>9.2?} p99 {r99:>9.2?} | McpTool p50 {o50:>9.2?} p99 {o99:>9.2?} | added p50 {:>8.2?}",
        o50.saturating_sub(r50)
    );
    shutdown.cancel();
    clients.stopped().await;
}

#[tokio::main]
async fn main() {
    let mcp = deps::mcp();
    let everything = mcp.everything();
    let python = mcp.python();
    let python_server = mcp.python_script("python_server.py");
    let before = rss_kb();
    let five: serde_json::Map<String, Value> = (0..5)
        .map(|i| {
            (
                format!("s{i}"),
                json!({"command": python, "args": [python_server]}),
            )
        })
        .collect();
    let (clients, shutdown) = clients(Value::Object(five)).await;
    let up = clients
        .servers()
        .iter()
        .filter(|s| s.state().peer.is_some())
        .count();
    let after = rss_kb();
    println!(
        "gateway RSS: {:.1} MB before, {:.1} MB with {up} stdio servers attached (+{:.1} MB)",
        before as f64 / 1024.0,
        after as f64 / 1024.0,
        (after as f64 - before as f64) / 1024.0
    );
    shutdown.cancel();
    clients.stopped().await;
    measure(
        "python SDK server, lookup, stdio",
        json!({"py": {"command": python, "args": [python_server]}}),
        "mcp_py_lookup",
        "lookup",
        json!({"key": "k"}),
    )
    .await;
    measure(
        "server-everything, echo, stdio",
        json!({"ev": {"command": "node", "args": [&everything, "stdio"]}}),
        "mcp_ev_echo",
        "echo",
        json!({"message": "hi"}),
    )
    .await;

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut http = tokio::process::Command::new("node")
        .arg(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    measure(
        "server-everything, echo, Streamable HTTP",
        json!({"ev": {"url": format!("http://127.0.0.1:{port}/mcp")}}),
        "mcp_ev_echo",
        "echo",
        json!({"message": "hi"}),
    )
    .await;
    let _ = http.kill().await;
}
