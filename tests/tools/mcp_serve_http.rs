//! `switchboard mcp` over Streamable HTTP (`MCP_LISTEN`, `MCP_TOKEN`), driven
//! by the official Python SDK's HTTP client against a running gateway on the
//! fake Telegram Bot API: the tools are listed, `notify` reaches the
//! operator's group, and `request_approval` is decided by an approver's press
//! (a non-approver's decides nothing). A request without the token or with a
//! wrong one gets 401, one from a foreign origin 403, an oversized body 413;
//! SIGTERM stops the server cleanly, and the token is never logged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::mcp_serve::{button, gateway, vars, wait_for, Client, GROUP, WAIT};
use crate::support;

use serde_json::json;
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use support::fake_llm::FakeLlm;
use support::fake_telegram::{FakeTelegram, FakeUser, Where};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

const TOKEN: &str = "mcp-http-token-4e7c1d9a0b";

/// `switchboard mcp` listening on a free loopback port; its log lines are
/// kept (the pipe is drained so a chatty server never blocks).
struct Server {
    child: Child,
    url: String,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(vars: &HashMap<&'static str, String>, dir: &Path) -> Server {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("mcp")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", &vars["DATABASE_URL"])
            .env("DATA_DIR", &vars["DATA_DIR"])
            .env("MCP_NOTIFY_CHAT", &vars["MCP_NOTIFY_CHAT"])
            .env("APPROVAL_TIMEOUT", "300")
            .env("MCP_LISTEN", "127.0.0.1:0")
            .env("MCP_TOKEN", TOKEN)
            .env("RUST_LOG", "debug")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let url = tokio::time::timeout(WAIT, async {
            loop {
                let line = lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("switchboard mcp ended before it listened");
                logs.lock().unwrap().push(line.clone());
                if let Some(at) = line.find("http://127.0.0.1:") {
                    let url = line[at..].split_whitespace().next().unwrap();
                    break url.trim_end_matches(['"', ',']).to_owned();
                }
            }
        })
        .await
        .expect("switchboard mcp logged its address");
        let kept = logs.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap().push(line);
            }
        });
        Server { child, url, logs }
    }

    fn logs(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }
}

/// A POST to the endpoint as a client makes it, with `headers` added.
async fn post(url: &str, headers: &[(&str, &str)], body: String) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(body).send().await.unwrap()
}

fn initialize_body() -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw-http", "version": "0"}}
    })
    .to_string()
}

#[tokio::test]
async fn an_external_agent_over_http_with_the_token_reaches_the_chat_and_others_are_refused() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vars = vars(&llm, &tg, dir.path());
    let ann = FakeUser::new(900, "Ann");
    let bob = FakeUser::new(901, "Bob");
    tg.ensure_chat(Where::Group(GROUP), &ann);
    let (running, shutdown) = gateway(&vars).await;
    let mut server = Server::start(&vars, dir.path()).await;
    assert!(server.url.ends_with("/mcp"), "{}", server.url);
    let own_origin = server.url.trim_end_matches("/mcp").to_owned();
    let bearer = format!("Bearer {TOKEN}");

    // No token, a wrong token: 401 with the scheme to use.
    for headers in [
        &[][..],
        &[("authorization", "Bearer not-the-token-at-all")][..],
        &[("authorization", "Basic bWNwOnNlY3JldA==")][..],
    ] {
        let refused = post(&server.url, headers, initialize_body()).await;
        assert_eq!(refused.status(), 401, "{headers:?}");
        assert_eq!(
            refused.headers()["www-authenticate"],
            "Bearer",
            "{headers:?}"
        );
    }
    // A page of another origin: 403 even with the token.
    let foreign = post(
        &server.url,
        &[
            ("authorization", &bearer),
            ("origin", "http://rebound.example:80"),
        ],
        initialize_body(),
    )
    .await;
    assert_eq!(foreign.status(), 403);
    // The listener's own origin with the token is served.
    let own = post(
        &server.url,
        &[("authorization", &bearer), ("origin", &own_origin)],
        initialize_body(),
    )
    .await;
    assert_eq!(own.status(), 200, "{}", own.text().await.unwrap());
    // A body past the cap: 413.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2 * 1024 * 1024)
    );
    let oversized = post(&server.url, &[("authorization", &bearer)], huge).await;
    assert_eq!(oversized.status(), 413);

    // The SDK's client, with the token: the same tools as over stdio.
    let mut client = Client::connect(&server.url, TOKEN, dir.path());
    let hello = client.next().await;
    assert_eq!(hello["server"], "switchboard");
    assert_eq!(
        hello["tools"],
        json!([
            "ask",
            "list_tasks",
            "notify",
            "recent_events",
            "request_approval"
        ])
    );

    // notify: posted in the operator's group.
    let sent = client
        .call(
            "notify",
            json!({"text": "Nightly build over HTTP finished"}),
        )
        .await;
    assert_eq!(sent["isError"], false, "{sent}");
    assert_eq!(sent["structured"]["status"], "sent", "{sent}");
    wait_for(&tg, "Nightly build over HTTP finished").await;

    // request_approval: Bob (no approver) cannot decide it, Ann can.
    client
        .send(
            "request_approval",
            json!({"action": "Rotate the staging database password", "timeout_secs": 300}),
        )
        .await;
    let card = wait_for(&tg, "Rotate the staging database password").await;
    let allow = button(&card, ":y");
    tg.callback(Where::Group(GROUP), &bob, card.message_id, &allow);
    assert!(
        tg.wait_until(WAIT, |t| t
            .calls_to("answerCallbackQuery")
            .iter()
            .any(|c| c.params.to_string().contains("Only the person who asked")))
            .await,
        "the non-approver's press was not refused"
    );
    tg.callback(Where::Group(GROUP), &ann, card.message_id, &allow);
    let decided = client.next().await;
    assert_eq!(decided["isError"], false, "{decided}");
    assert_eq!(decided["structured"]["decision"], "approved", "{decided}");
    assert_eq!(decided["structured"]["decided_by"], "Ann", "{decided}");

    // SIGTERM with the client still connected: a clean stop.
    let pid = server.child.id().unwrap();
    let killed = tokio::process::Command::new("kill")
        .arg(pid.to_string())
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(WAIT, server.child.wait())
        .await
        .expect("switchboard mcp stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}\n{}", server.logs());
    drop(client);
    let logs = server.logs();
    assert!(
        logs.contains("refused a request without the right bearer token"),
        "{logs}"
    );
    assert!(!logs.contains(TOKEN), "the token was logged:\n{logs}");

    shutdown.cancel();
    tokio::time::timeout(WAIT, running.wait()).await.unwrap();
}

#[tokio::test]
async fn a_listener_without_a_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let done = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("mcp")
        .env_clear()
        .env("DATA_DIR", dir.path())
        .env("MCP_LISTEN", "127.0.0.1:0")
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    assert!(!done.status.success());
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(stderr.contains("MCP_TOKEN is not set"), "{stderr}");
}
