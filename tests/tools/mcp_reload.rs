//! Live reload of `MCP_SERVERS_FILE` through the gateway: a server added to
//! the file is started and its tools are callable on the next turn; one
//! removed is stopped and no longer offered; a broken file changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::mcp::mcp;
use crate::support;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use support::e2e::{tool_names, tool_result, Harness};
use support::fake_llm::Reply;
use switchboard::loaded::{Loaded, SourceStatus};

fn save(path: &Path, servers: Value) {
    let partial = path.with_extension("tmp");
    std::fs::write(&partial, json!({ "mcpServers": servers }).to_string()).unwrap();
    std::fs::rename(&partial, path).unwrap();
}

/// Waits until `MCP_SERVERS_FILE`'s status satisfies `done`.
async fn until(loaded: &Loaded, done: impl Fn(&SourceStatus) -> bool) {
    let mut updates = loaded.subscribe();
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while !loaded.source("MCP_SERVERS_FILE").is_some_and(|s| done(&s)) {
            updates.changed().await.unwrap();
        }
    })
    .await;
    assert!(waited.is_ok(), "no reload: {:?}", loaded.snapshot());
}

#[tokio::test]
async fn a_server_added_to_the_file_becomes_callable_and_a_removed_one_goes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    save(&file, json!({}));
    let path = file.display().to_string();
    let env_path = std::env::var("PATH").unwrap();
    let h = Harness::with(&[
        ("MCP_SERVERS_FILE", path.as_str()),
        ("PATH", env_path.as_str()),
    ])
    .await;
    let loaded = h.running.loaded();
    assert_eq!(
        loaded.source("MCP_SERVERS_FILE").unwrap().items,
        "0 server(s)"
    );

    let everything = mcp().everything();
    save(
        &file,
        json!({"everything": {"command": "node", "args": [everything, "stdio"]}}),
    );
    until(loaded, |s| s.items == "1 server(s)").await;
    h.llm.push(Reply::tool_calls([(
        "call_e",
        "mcp_everything_echo",
        json!({"message": "added while running"}),
    )]));
    h.llm.push(Reply::text("It echoed."));
    h.channel.dm(1, "echo something").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("It echoed.")).await;
    let requests = h.requests(2).await;
    assert!(tool_names(&requests[0]).contains(&"mcp_everything_echo".to_owned()));
    assert_eq!(
        tool_result(&requests[1], "call_e"),
        "Echo: added while running"
    );

    // Broken: refused, the server keeps running.
    std::fs::write(&file, "{\"mcpServers\": {\"x\": [}").unwrap();
    until(loaded, |s| s.refused.is_some()).await;
    let refusal = loaded.source("MCP_SERVERS_FILE").unwrap().refused.unwrap();
    assert!(
        refusal.message.contains("mcp.json") && refusal.message.contains("line 1, column"),
        "{}",
        refusal.message
    );
    assert_eq!(
        loaded.source("MCP_SERVERS_FILE").unwrap().items,
        "1 server(s)"
    );

    // Removed: stopped, and the next turn is not offered its tools.
    save(&file, json!({}));
    until(loaded, |s| s.items == "0 server(s)").await;
    h.llm.push(Reply::text("No echo now."));
    h.channel.dm(1, "anything?").await;
    h.wait_for("the answer", |l| l.has_text("No echo now."))
        .await;
    let requests = h.requests(3).await;
    assert!(
        !tool_names(&requests[2])
            .iter()
            .any(|t| t.starts_with("mcp_everything_")),
        "{:?}",
        tool_names(&requests[2])
    );
    h.stop().await;
}
