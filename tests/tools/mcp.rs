//! The MCP client against real servers: the reference server
//! `@modelcontextprotocol/server-everything` and a misbehaving server written
//! with the official SDK (`tests/mcp/misbehaving.mjs`), both over stdio; and
//! through the real core, where an MCP tool call needs an approval card and
//! an image result reaches a model that sees images as an image part.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use support::deps::McpDeps;
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;
use switchboard::mcp::{load_mcp_servers, McpClients, McpContext, McpServer, Status};
use switchboard::tools::{Tool, ToolContext, ToolError, ToolRegistry};
use tokio_util::sync::CancellationToken;

/// The MCP test servers, installed on first use (`support::deps`).
pub(crate) fn mcp() -> &'static McpDeps {
    support::deps::mcp()
}

/// The value of `${MCP_TEST_GREETING}` in the gateway test: a secret.
const SECRET: &str = "greeting-secret-4f9a2c71";

fn everything_entry() -> Value {
    let script = mcp().everything();
    json!({"command": "node", "args": [script, "stdio"], "env": {"GREETING": "${MCP_TEST_GREETING}"}})
}

/// Where a stdio server started with data dir `data_dir` keeps its call log:
/// its `CALL_LOG` is relative, in the one directory it may write.
pub(crate) fn call_log(data_dir: &Path, server: &str) -> PathBuf {
    switchboard::mcp::server_dir(data_dir, server).join("calls.log")
}

fn misbehaving_entry(extra: Value) -> Value {
    let mut entry = json!({
        "command": "node",
        "args": [mcp().node_script("misbehaving.mjs")],
        "env": {"CALL_LOG": "calls.log"},
    });
    if let (Some(e), Value::Object(more)) = (entry.as_object_mut(), extra) {
        e.extend(more);
    }
    entry
}

/// A servers file in `dir` with `servers`.
pub(crate) fn servers_file(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

pub(crate) fn lookup(k: &str) -> Option<String> {
    match k {
        "MCP_TEST_GREETING" => Some("hello-from-the-entry".into()),
        _ => std::env::var(k).ok(),
    }
}

pub(crate) async fn start(dir: &Path, servers: Value) -> (McpClients, CancellationToken) {
    let (defs, problems) = load_mcp_servers(&servers_file(dir, servers), lookup);
    assert!(problems.is_empty(), "{problems:?}");
    let shutdown = CancellationToken::new();
    let ctx = McpContext {
        data_dir: dir.to_path_buf(),
        ..McpContext::default()
    };
    let clients = McpClients::start(&defs, ctx, &shutdown).await;
    (clients, shutdown)
}

pub(crate) fn tool(clients: &McpClients, name: &str) -> Arc<dyn Tool> {
    clients
        .tools(&[])
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn wait_until<F: Fn(&switchboard::mcp::ServerState) -> bool>(
    server: &McpServer,
    what: &str,
    f: F,
) {
    let mut rx = server.watch();
    tokio::time::timeout(Duration::from_secs(60), rx.wait_for(|s| f(s)))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap();
}

pub(crate) fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn the_reference_server_is_initialized_and_its_tools_are_called() {
    let dir = tempfile::tempdir().unwrap();
    let (clients, shutdown) = start(
        dir.path(),
        json!({"everything": everything_entry(), "hinted": {
            "command": "node",
            "args": [mcp().everything(), "stdio"],
            "approval": "hints", "deny": ["get-env"]
        }}),
    )
    .await;
    let server = &clients.servers()[0];
    let state = server.state();
    assert_eq!(state.status, Status::Up, "{:?}", state.last_error);
    assert!(state.protocol_version.is_some());
    let names: Vec<String> = clients
        .tools(&[])
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    for expected in [
        "mcp_everything_echo",
        "mcp_everything_get-tiny-image",
        "mcp_hinted_echo",
    ] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    assert!(
        !names.contains(&"mcp_hinted_get-env".to_owned()),
        "denied tools are not offered"
    );
    // We declare no sampling or elicitation capability, so the server keeps
    // the tools that would ask us for them to itself.
    assert!(
        !names
            .iter()
            .any(|n| n.contains("sampling") || n.contains("elicitation")),
        "{names:?}"
    );

    let ctx = ToolContext::default();
    let echo = tool(&clients, "mcp_everything_echo");
    assert!(
        echo.spec().requires_approval,
        "every MCP tool asks by default"
    );
    assert_eq!(
        echo.spec().parameters["properties"]["message"]["type"],
        "string"
    );
    let out = echo
        .call(json!({"message": "hi there"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, "Echo: hi there");
    let summary = echo.approval_summary(&json!({"message": "hi there"})).await;
    assert!(
        summary.contains("MCP server: everything") && summary.contains("tool: echo"),
        "{summary}"
    );
    assert!(summary.contains("\"message\": \"hi there\""), "{summary}");

    let image = tool(&clients, "mcp_everything_get-tiny-image")
        .call(json!({}), &ctx)
        .await
        .unwrap();
    // Without a sink that takes images (a model without vision): a note.
    assert!(image.contains("[image result 1: image/png, "), "{image}");

    let weather = tool(&clients, "mcp_everything_get-structured-content")
        .call(json!({"location": "Chicago"}), &ctx)
        .await
        .unwrap();
    assert!(weather.contains("temperature"), "{weather}");

    // The environment is the entry's (and PATH), nothing of ours.
    let env = tool(&clients, "mcp_everything_get-env")
        .call(json!({}), &ctx)
        .await
        .unwrap();
    assert!(env.contains("hello-from-the-entry"), "{env}");
    assert!(!env.contains("CARGO_MANIFEST_DIR"), "{env}");

    // `hints`: a readOnlyHint tool runs without a card, others still ask.
    assert!(!tool(&clients, "mcp_hinted_echo").spec().requires_approval);
    assert!(
        tool(&clients, "mcp_hinted_toggle-simulated-logging")
            .spec()
            .requires_approval
    );

    // The schema's own validation errors come back as tool errors.
    let bad = echo.call(json!({"message": 5}), &ctx).await.unwrap_err();
    assert!(matches!(bad, ToolError::Failed { .. }), "{bad:?}");
    shutdown.cancel();
    wait_until(server, "the stop", |s| s.status == Status::Down).await;
}

/// server-everything over Streamable HTTP on a free port, once it listens.
async fn everything_over_http() -> (tokio::process::Child, u16) {
    use tokio::io::AsyncBufReadExt;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = mcp().everything();
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let listening = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("server-everything exited before listening");
    };
    tokio::time::timeout(Duration::from_secs(60), listening)
        .await
        .unwrap();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}

#[tokio::test]
async fn the_reference_server_over_streamable_http() {
    let (_server, port) = everything_over_http().await;
    let dir = tempfile::tempdir().unwrap();
    let (clients, shutdown) = start(
        dir.path(),
        json!({"remote": {
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"Authorization": "Bearer ${MCP_TEST_GREETING}"},
            "approval": "never"
        }}),
    )
    .await;
    let state = clients.servers()[0].state();
    assert_eq!(state.status, Status::Up, "{:?}", state.last_error);
    let echo = tool(&clients, "mcp_remote_echo");
    assert!(!echo.spec().requires_approval);
    let out = echo
        .call(json!({"message": "over http"}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out, "Echo: over http");
    shutdown.cancel();
    clients.stopped().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_a_tool_error_and_the_server_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = call_log(dir.path(), "bad");
    let (clients, shutdown) = start(dir.path(), json!({"bad": misbehaving_entry(json!({}))})).await;
    let server = &clients.servers()[0];
    let ctx = ToolContext::default();
    let err = tool(&clients, "mcp_bad_crash")
        .call(json!({}), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.for_model().contains("stopped during the call"),
        "{}",
        err.for_model()
    );
    wait_until(server, "the restart", |s| {
        s.status == Status::Up && s.connections == 2
    })
    .await;
    let out = tool(&clients, "mcp_bad_note")
        .call(json!({"text": "after the crash"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, "noted: after the crash");
    assert_eq!(
        log_lines(&log).iter().filter(|l| *l == "started").count(),
        2
    );

    // isError is a tool error with the server's text.
    let err = tool(&clients, "mcp_bad_fail")
        .call(json!({}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(err.for_model(), "error: the disk is full");

    // A 5 MB result arrives whole (the runtime stores large results).
    let huge = tool(&clients, "mcp_bad_huge")
        .call(json!({"mb": 5}), &ctx)
        .await
        .unwrap();
    assert_eq!(huge.len(), 5 * 1024 * 1024);

    // 2 MB of stderr neither blocks the server nor the next call.
    let out = tool(&clients, "mcp_bad_flood")
        .call(json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, "flooded");
    let out = tool(&clients, "mcp_bad_peek")
        .call(json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(out, "nothing here");

    // A changed tool list is read again when the server says so, and the
    // agent's registry offers the new tool from then on.
    let clients = Arc::new(clients);
    let mut registry = ToolRegistry::new();
    registry.register_dynamic(clients.clone());
    assert!(registry.get("mcp_bad_extra").is_none());
    tool(&clients, "mcp_bad_grow")
        .call(json!({}), &ctx)
        .await
        .unwrap();
    let server = &clients.servers()[0];
    wait_until(server, "the new tool list", |s| {
        s.tools.iter().any(|t| t.name == "extra")
    })
    .await;
    let extra = registry.get("mcp_bad_extra").expect("offered once listed");
    assert_eq!(extra.call(json!({}), &ctx).await.unwrap(), "extra");
    assert!(registry.names().contains(&"mcp_bad_extra".to_owned()));
    shutdown.cancel();
}

#[tokio::test]
async fn a_server_listing_500_tools_offers_the_first_100() {
    let dir = tempfile::tempdir().unwrap();
    let (clients, shutdown) = start(
        dir.path(),
        json!({"many": misbehaving_entry(json!({"env": {"CALL_LOG": "calls.log", "MANY_TOOLS": "500"}}))}),
    )
    .await;
    assert_eq!(clients.servers()[0].state().tools.len(), 508);
    let offered = clients.tools(&[]);
    assert_eq!(offered.len(), switchboard::mcp::MAX_TOOLS_PER_SERVER);
    let out = tool(&clients, "mcp_many_note")
        .call(json!({"text": "still fine"}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out, "noted: still fine");
    shutdown.cancel();
}

#[tokio::test]
async fn a_hanging_call_times_out_and_a_cancelled_turn_cancels_it_at_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = call_log(dir.path(), "slow");
    let (clients, shutdown) = start(
        dir.path(),
        json!({"slow": misbehaving_entry(json!({"timeout_secs": 1}))}),
    )
    .await;
    let hang = tool(&clients, "mcp_slow_hang");
    let err = hang
        .call(json!({}), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, ToolError::Timeout(d) if d == Duration::from_secs(1)),
        "{err:?}"
    );

    let ctx = ToolContext::default();
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(async move { hang.call(json!({}), &ctx).await });
    // Cancel once the server has the call.
    let mut seen = 0;
    while seen < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen = log_lines(&log)
            .iter()
            .filter(|l| l.starts_with("call hang"))
            .count();
    }
    cancel.cancel();
    assert!(matches!(call.await.unwrap(), Err(ToolError::Cancelled)));
    // The server hears of both: the timed-out call and the cancelled one.
    for _ in 0..500 {
        if log_lines(&log)
            .iter()
            .filter(|l| *l == "cancelled hang")
            .count()
            == 2
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        log_lines(&log)
            .iter()
            .filter(|l| *l == "cancelled hang")
            .count(),
        2,
        "{:?}",
        log_lines(&log)
    );
    // And still answers.
    let out = tool(&clients, "mcp_slow_peek")
        .call(json!({}), &ToolContext::default())
        .await;
    assert_eq!(out.unwrap(), "nothing here");
    shutdown.cancel();
}

/// A server that starts but never answers `initialize` (here a process that
/// reads nothing and writes nothing) is marked down once `INIT_TIMEOUT`
/// passes — on a paused clock, so the 30 s cost nothing — with the reason;
/// the start goes on without it.
#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_initialize_is_marked_down_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let (clients, shutdown) = start(
        dir.path(),
        json!({"silent": {"command": "sleep", "args": ["600"]}}),
    )
    .await;
    let state = clients.servers()[0].state();
    assert_eq!(state.status, Status::Down);
    let error = state.last_error.unwrap_or_default();
    assert!(
        error.contains("no answer to initialize within 30s"),
        "{error}"
    );
    assert!(clients.tools(&[]).is_empty());
    shutdown.cancel();
    clients.stopped().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_down_and_the_rest_load() {
    let dir = tempfile::tempdir().unwrap();
    let log = call_log(dir.path(), "good");
    let (clients, shutdown) = start(
        dir.path(),
        json!({
            "missing": {"command": "/nonexistent/mcp-server"},
            "good": misbehaving_entry(json!({}))
        }),
    )
    .await;
    let by_name = |n: &str| {
        clients
            .servers()
            .iter()
            .find(|s| s.name() == n)
            .unwrap()
            .state()
    };
    let missing = by_name("missing");
    assert_eq!(missing.status, Status::Down);
    assert!(missing.last_error.unwrap().contains("cannot start"));
    assert_eq!(by_name("good").status, Status::Up);
    let names: Vec<String> = clients
        .tools(&[])
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with("mcp_good_")),
        "{names:?}"
    );
    // A name already taken is refused.
    let refused = clients.tools(&["mcp_good_note".to_owned()]);
    assert!(refused.iter().all(|t| t.spec().name != "mcp_good_note"));

    // Shutdown stops the server and what it started in its process group.
    let pids: Vec<i32> = log_lines(&log)
        .iter()
        .find_map(|l| {
            l.strip_prefix("pids ")
                .map(|p| p.split(' ').map(|n| n.parse().unwrap()).collect())
        })
        .unwrap();
    assert!(pids.iter().all(|&p| alive(p)), "{pids:?}");
    shutdown.cancel();
    clients.stopped().await;
    for _ in 0..500 {
        if !pids.iter().any(|&p| alive(p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!pids.iter().any(|&p| alive(p)), "still running: {pids:?}");
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

#[tokio::test]
async fn through_the_gateway_a_card_guards_each_call_and_a_denied_one_never_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(
        dir.path(),
        json!({"everything": everything_entry(), "notes": misbehaving_entry(json!({}))}),
    );
    let file = file.display().to_string();
    let path = std::env::var("PATH").unwrap();
    let h = Harness::with(&[
        ("MCP_SERVERS_FILE", file.as_str()),
        ("MCP_TEST_GREETING", SECRET),
        ("PATH", path.as_str()),
        ("HEALTH_LISTEN", "127.0.0.1:0"),
    ])
    .await;
    let log = call_log(&h.data_dir(), "notes");
    h.llm.push(Reply::tool_calls([(
        "call_e",
        "mcp_everything_echo",
        json!({"message": "ping through the gateway"}),
    )]));
    h.llm.push(Reply::text("It echoed."));
    h.channel.dm(1, "echo something").await;
    let card = h.channel.card().await;
    assert!(
        card.text.contains("everything") && card.text.contains("echo"),
        "{}",
        card.text
    );
    assert!(
        card.text.contains("ping through the gateway"),
        "{}",
        card.text
    );
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("It echoed.")).await;
    let requests = h.requests(2).await;
    assert_eq!(
        tool_result(&requests[1], "call_e"),
        "Echo: ping through the gateway"
    );

    h.llm.push(Reply::tool_calls([(
        "call_n",
        "mcp_notes_note",
        json!({"text": "do not store this"}),
    )]));
    h.llm.push(Reply::text("Not stored."));
    h.channel.dm(1, "store a note").await;
    let second = h.channel.next_card(card.id).await;
    h.channel.press(1, &second.action('n')).await;
    h.wait_for("the answer", |l| l.has_text("Not stored."))
        .await;
    assert!(
        !log_lines(&log).iter().any(|l| l.starts_with("call ")),
        "the server was called: {:?}",
        log_lines(&log)
    );

    // A value expanded from ${VAR} is a secret: the server's environment
    // holds it, the model never sees it.
    h.llm.push(Reply::tool_calls([(
        "call_env",
        "mcp_everything_get-env",
        json!({}),
    )]));
    h.llm.push(Reply::text("Read the environment."));
    h.channel.dm(1, "what is your environment?").await;
    let third = h.channel.next_card(second.id).await;
    h.channel.press(1, &third.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Read the environment."))
        .await;
    let requests = h.requests(6).await;
    let env = tool_result(&requests[5], "call_env");
    assert!(env.contains("GREETING"), "{env}");
    for r in &requests {
        assert!(
            !r.to_string().contains(SECRET),
            "the secret reached the model: {r}"
        );
    }

    // `/tools` lists them by source, marking those that ask.
    h.channel.dm(1, "/tools").await;
    let log = h
        .wait_for("the tool list", |l| l.any_contains("**Tools**"))
        .await;
    let list = log.find("**Tools**").unwrap().text.clone();
    assert!(list.contains("Built-in: read_file"), "{list}");
    assert!(
        list.contains("MCP server everything: mcp_everything_echo*"),
        "{list}"
    );
    assert!(list.contains("MCP server notes: mcp_notes_note*"), "{list}");

    // `/metrics` counts the calls by server and outcome (the denied call
    // never reached its server: nothing counted for `notes`).
    let addr = h.running.health_addr.expect("the endpoint is bound");
    let metrics = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        "switchboard_mcp_calls_total{server=\"everything\",outcome=\"ok\"} 2",
        "switchboard_mcp_calls_total{server=\"notes\",outcome=\"ok\"} 0",
        "switchboard_mcp_server_up{server=\"everything\"} 1",
        "switchboard_mcp_server_up{server=\"notes\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} missing:\n{metrics}");
    }
    h.stop().await;
}

/// The base64 PNG `get-tiny-image` of the reference server returns.
fn tiny_image() -> String {
    let source = std::fs::read_to_string(
        mcp().node_module("@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js"),
    )
    .unwrap();
    let start = source.find("MCP_TINY_IMAGE = \"").unwrap() + "MCP_TINY_IMAGE = \"".len();
    let end = start + source[start..].find('"').unwrap();
    source[start..end].to_owned()
}

/// A gateway whose model sees images (`vision`), with the reference server
/// under `hints` (its read-only `get-tiny-image` runs without a card) and
/// images kept for one turn; the model asks for the image, then answers.
async fn image_round(vision: &str) -> (Harness, Vec<Value>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut entry = everything_entry();
    entry["approval"] = json!("hints");
    let file = servers_file(dir.path(), json!({ "everything": entry }));
    let file = file.display().to_string();
    let path = std::env::var("PATH").unwrap();
    let h = Harness::with(&[
        ("MCP_SERVERS_FILE", file.as_str()),
        ("MCP_TEST_GREETING", SECRET),
        ("PATH", path.as_str()),
        ("LLM_VISION", vision),
        ("MEDIA_IMAGE_TURNS", "1"),
    ])
    .await;
    h.llm.push(Reply::tool_calls([(
        "call_img",
        "mcp_everything_get-tiny-image",
        json!({}),
    )]));
    h.llm.push(Reply::text("A tiny logo."));
    h.channel.dm(1, "show me the tiny image").await;
    h.wait_for("the answer", |l| l.has_text("A tiny logo."))
        .await;
    let requests = h.requests(2).await;
    (h, requests, dir)
}

#[tokio::test]
async fn an_image_result_reaches_a_model_that_sees_as_an_image_part_after_the_tool_message() {
    let (h, requests, _dir) = image_round("true").await;
    let messages = support::e2e::messages(&requests[1]);
    let at = messages
        .iter()
        .position(|m| m["role"] == "tool" && m["tool_call_id"] == "call_img")
        .unwrap();
    let note = messages[at]["content"].as_str().unwrap();
    assert!(
        note.contains("Here's the image you requested:")
            && note.contains("[image result 1: image/png, ")
            && note.contains(" bytes — attached]"),
        "{note}"
    );
    // The chat-completions `tool` message takes text only: the image
    // follows in a user message, byte for byte what the server returned.
    let images = &messages[at + 1];
    assert_eq!(images["role"], "user", "{:#}", requests[1]);
    assert_eq!(
        images["content"][0],
        json!({"type": "text", "text": "Images returned by mcp_everything_get-tiny-image:"})
    );
    assert_eq!(
        images["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{}", tiny_image())
    );
    assert_eq!(support::images::in_request(&requests[1]).len(), 1);

    // The next turn: the image aged out (MEDIA_IMAGE_TURNS=1) and the
    // history kept only its reference — a placeholder now.
    h.llm.push(Reply::text("You're welcome."));
    h.channel.dm(1, "thanks").await;
    h.wait_for("the second answer", |l| l.has_text("You're welcome."))
        .await;
    let requests = h.requests(3).await;
    assert!(!support::images::any_in(&requests[2]), "{:#}", requests[2]);
    let note = tool_result(&requests[2], "call_img");
    assert!(
        note.ends_with("[image 20x20 sent earlier; no longer shown]"),
        "{note}"
    );
    h.stop().await;
}

#[tokio::test]
async fn without_vision_an_image_result_is_only_a_note() {
    let (h, requests, _dir) = image_round("false").await;
    let note = tool_result(&requests[1], "call_img");
    assert!(note.contains("[image result 1: image/png, "), "{note}");
    assert!(!note.contains("attached"), "{note}");
    assert!(!support::images::any_in(&requests[1]), "{:#}", requests[1]);
    h.stop().await;
}
