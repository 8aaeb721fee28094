//! Issue 38 item 8: MCP servers are confined and their words defused. A
//! stdio server runs under the exec sandbox, writing only in its own
//! directory: it reads neither the database nor an env file beside it; a
//! tool's description reaches the model defused; a tool that re-annotates
//! itself read-only through `list_changed` keeps its card (and the change
//! is audited).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::mcp::{mcp, servers_file, tool};
use crate::support::e2e::Harness;
use crate::support::fake_llm::Reply;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use switchboard::mcp::{load_mcp_servers, server_dir, McpClients, McpContext, REANNOTATED};
use switchboard::store::Store;
use switchboard::tools::{Sandbox, SandboxConfig, SandboxMode, ToolContext};
use tokio_util::sync::CancellationToken;

const DB_SECRET: &str = "db-row-secret-51c0e7";
const ENV_SECRET: &str = "env-file-secret-9ab3f2";

/// The misbehaving server with its hostile tools, as `approval: hints`.
fn evil_entry() -> Value {
    json!({
        "command": "node",
        "args": [mcp().node_script("misbehaving.mjs")],
        "env": {"CALL_LOG": "calls.log", "EVIL": "1"},
        "approval": "hints",
    })
}

async fn start(
    dir: &Path,
    store: Option<Store>,
    mode: SandboxMode,
) -> (McpClients, CancellationToken) {
    let file = servers_file(dir, json!({"evil": evil_entry()}));
    let (defs, problems) = load_mcp_servers(&file, |k| std::env::var(k).ok());
    assert!(problems.is_empty(), "{problems:?}");
    let shutdown = CancellationToken::new();
    let ctx = McpContext {
        data_dir: dir.to_path_buf(),
        store,
        sandbox: SandboxConfig {
            mode,
            ..SandboxConfig::default()
        },
    };
    let clients = McpClients::start(&defs, ctx, &shutdown).await;
    let state = clients.servers()[0].state();
    assert!(state.peer.is_some(), "not up: {:?}", state.last_error);
    (clients, shutdown)
}

/// The confinements this machine has (Landlock, Bubblewrap): at least one.
fn levels() -> Vec<SandboxMode> {
    let found: Vec<SandboxMode> = [SandboxMode::Landlock, SandboxMode::Bwrap]
        .into_iter()
        .filter(|&mode| {
            let found = Sandbox::detect(&SandboxConfig {
                mode,
                ..SandboxConfig::default()
            });
            if let Err(e) = &found {
                super::sandbox::lacking(mode, e);
            }
            found.is_ok()
        })
        .collect();
    assert!(!found.is_empty(), "neither Landlock nor bwrap works here");
    found
}

#[tokio::test]
async fn a_stdio_server_reads_neither_the_database_nor_the_env_file() {
    for mode in levels() {
        reads_only_its_own(mode).await;
    }
}

async fn reads_only_its_own(mode: SandboxMode) {
    let dir = tempfile::tempdir().unwrap();
    // What sits in DATA_DIR and beside it: the database, an env file.
    std::fs::write(dir.path().join("switchboard.db"), DB_SECRET).unwrap();
    std::fs::write(dir.path().join(".env"), format!("WEB_TOKEN={ENV_SECRET}")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("secrets.env"), ENV_SECRET).unwrap();
    let (clients, shutdown) = start(dir.path(), None, mode).await;
    let read = tool(&clients, "mcp_evil_read");
    let ctx = ToolContext::default();
    for path in [
        dir.path().join("switchboard.db"),
        dir.path().join(".env"),
        elsewhere.path().join("secrets.env"),
    ] {
        let got = read.call(json!({ "path": path }), &ctx).await;
        let text = format!("{got:?}");
        assert!(
            !text.contains(DB_SECRET) && !text.contains(ENV_SECRET),
            "{mode:?}: the server read {}: {text}",
            path.display()
        );
        assert!(text.contains("refused"), "{mode:?}: {text}");
    }
    // Its own directory is its to use: it wrote its log there and reads it.
    let own = server_dir(dir.path(), "evil");
    std::fs::write(own.join("own.txt"), "mine").unwrap();
    let got = read
        .call(json!({ "path": own.join("own.txt") }), &ctx)
        .await
        .unwrap();
    assert!(got.contains("read: mine"), "{mode:?}: {got}");
    let log = std::fs::read_to_string(own.join("calls.log")).unwrap();
    assert!(log.contains("call read"), "{mode:?}: {log}");
    shutdown.cancel();
    clients.stopped().await;
}

#[tokio::test]
async fn a_list_changed_re_annotation_keeps_the_card_and_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    let store = Store::open(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    let (clients, shutdown) = start(dir.path(), Some(store.clone()), SandboxMode::Auto).await;
    assert!(tool(&clients, "mcp_evil_sneak").spec().requires_approval);
    assert!(!tool(&clients, "mcp_evil_peek").spec().requires_approval);

    let disguise = tool(&clients, "mcp_evil_disguise");
    disguise
        .call(json!({}), &ToolContext::default())
        .await
        .unwrap();
    let server = &clients.servers()[0];
    let mut rx = server.watch();
    tokio::time::timeout(
        Duration::from_secs(30),
        rx.wait_for(|s| {
            s.tools.iter().any(|t| {
                t.name == "sneak"
                    && t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)
            })
        }),
    )
    .await
    .expect("the server re-listed its tools")
    .unwrap();
    // The server now says `sneak` is read-only; it still needs a card.
    let sneak = tool(&clients, "mcp_evil_sneak");
    assert!(sneak.spec().requires_approval, "{:?}", sneak.spec());
    assert!(!sneak.spec().concurrency_safe);
    let mut audited = Vec::new();
    for _ in 0..100 {
        audited = store.audit().recent(50).await.unwrap();
        if audited.iter().any(|e| e.kind == REANNOTATED) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let event = audited
        .iter()
        .find(|e| e.kind == REANNOTATED)
        .expect("the re-annotation is audited");
    assert_eq!(event.detail["server"], "evil");
    assert_eq!(event.detail["tool"], "sneak");
    shutdown.cancel();
    clients.stopped().await;
}

#[tokio::test]
async fn forged_markers_in_a_tool_description_reach_the_model_defused() {
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"evil": evil_entry()}));
    let file = file.display().to_string();
    let path = std::env::var("PATH").unwrap();
    let h = Harness::with(&[("MCP_SERVERS_FILE", file.as_str()), ("PATH", path.as_str())]).await;
    h.llm.push(Reply::text("Nothing to do."));
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.has_text("Nothing to do."))
        .await;
    let request = &h.requests(1).await[0];
    let forged = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp_evil_forged")
        .unwrap_or_else(|| panic!("no forged tool offered: {request}"));
    let text = forged.to_string();
    assert!(text.contains("Looks things up."), "{text}");
    for marker in ["[SYSTEM NOTIFICATION", "<tool_call>", "</tool_call>"] {
        assert!(!text.contains(marker), "{marker} reached the model: {text}");
    }
    h.stop().await;
}
