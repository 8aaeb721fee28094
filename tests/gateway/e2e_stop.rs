//! `/stop` while a tool hangs: the turn ends at once ("Cancelled."), the
//! tool's result never reaches the model, and the session answers the next
//! message. The tools here wait on a server that accepts and never answers,
//! longer than the test waits: only the stop can end them in time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use support::e2e::{messages, Harness};
use support::fake_llm::Reply;
use switchboard::store::TaskStatus;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A server that takes connections and never answers; a message on the
/// channel for each connection taken.
async fn hanging_server() -> (String, mpsc::UnboundedReceiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            let _ = tx.send(());
        }
    });
    (format!("http://{addr}"), rx)
}

/// The model calls `tool` with `args`; after a tool result it would say
/// "Tool finished." (it must never get there); anything else is echoed.
fn model(h: &Harness, tool: &'static str, args: Value) {
    h.llm.set_responder(move |request| {
        let last = messages(request).last().cloned().unwrap_or_default();
        let said = last["content"].as_str().unwrap_or_default().to_owned();
        if last["role"] == "tool" {
            Reply::text("Tool finished.")
        } else if said.contains("go") {
            Reply::tool_calls([("call_1", tool, args.clone())])
        } else {
            Reply::text("Back again.")
        }
    });
}

async fn stop_while_running(h: &Harness, accepted: &mut mpsc::UnboundedReceiver<()>) {
    h.channel.dm(1, "go").await;
    // The tool is running: its request reached the server.
    accepted.recv().await.unwrap();
    h.channel.dm(1, "/stop").await;
    h.wait_for("the stopped turn", |l| l.any_contains("Cancelled."))
        .await;
    h.channel.dm(1, "hello").await;
    h.wait_for("the next answer", |l| l.any_contains("Back again."))
        .await;
    h.idle().await;
    let log = h.channel.log();
    assert!(!log.any_contains("Tool finished."), "{log}");
    let requests = h.llm.requests().await;
    let continued = requests
        .iter()
        .filter(|r| messages(r).last().is_some_and(|m| m["role"] == "tool"))
        .count();
    assert_eq!(
        continued, 0,
        "the stopped turn never went back to the model"
    );
    assert_eq!(requests.len(), 2, "`go` and `hello`, one call each");
}

#[tokio::test]
async fn stop_ends_a_hanging_web_fetch() {
    let (url, mut accepted) = hanging_server().await;
    let h = Harness::with(&[("WEB_FETCH_ALLOW", "127.0.0.1")]).await;
    model(&h, "web_fetch", json!({ "url": format!("{url}/slow") }));
    stop_while_running(&h, &mut accepted).await;
    h.stop().await;
}

/// An operator's HTTP tool knows nothing of cancellation: the turn's stop
/// must not wait for its 30 s timeout.
#[tokio::test]
async fn stop_ends_a_hanging_http_tool() {
    let (url, mut accepted) = hanging_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.json");
    let tools = json!({"tools": [{
        "name": "slow_api",
        "description": "An API that takes its time",
        "method": "GET",
        "url": format!("{url}/slow"),
        "parameters": {"type": "object", "properties": {}},
        "allow_private": true
    }]});
    std::fs::write(&file, tools.to_string()).unwrap();
    let h = Harness::with(&[("HTTP_TOOLS_FILE", file.to_str().unwrap())]).await;
    model(&h, "slow_api", json!({}));
    stop_while_running(&h, &mut accepted).await;
    h.stop().await;
}

#[tokio::test]
async fn a_stopped_answer_stays_in_history_with_a_note() {
    let h = Harness::start().await;
    h.llm
        .push(Reply::text("The first half of a long answer").then_stall());
    h.channel.dm(1, "tell me a long story").await;
    h.wait_for("the draft", |l| l.any_contains("The first half"))
        .await;
    h.channel.dm(1, "/stop").await;
    h.wait_for("the stop", |l| l.any_contains("Cancelled."))
        .await;
    h.idle().await;
    h.llm.push(Reply::text("Continuing."));
    h.channel.dm(1, "go on").await;
    h.wait_for("the next answer", |l| l.has_text("Continuing."))
        .await;
    let requests = h.requests(2).await;
    let history = messages(&requests[1]);
    let said: Vec<String> = history
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert!(
        said.iter()
            .any(|t| t.starts_with("The first half of a long answer")
                && t.contains("[The user stopped this answer here; it is unfinished.]")),
        "{said:?}"
    );
    h.stop().await;
}

/// Commands never wait behind a turn: while a tool hangs, `/help`,
/// `/whoami`, `/verbose` and `/tasks` are answered at once and the turn
/// keeps running; `/clear` says it waits for the turn; then `/stop` ends it.
#[tokio::test]
async fn commands_are_answered_while_a_turn_runs() {
    let (url, mut accepted) = hanging_server().await;
    let h = Harness::with(&[("WEB_FETCH_ALLOW", "127.0.0.1")]).await;
    model(&h, "web_fetch", json!({ "url": format!("{url}/slow") }));
    h.channel.dm(1, "go").await;
    accepted.recv().await.unwrap();
    for (command, answer) in [
        ("/help", "**Commands**"),
        ("/whoami", "(user id 1)"),
        ("/verbose", "erbos"),
        ("/tasks", "task"),
        ("/clear", "as soon as the current answer ends"),
    ] {
        h.channel.dm(1, command).await;
        h.wait_for(&format!("the answer to {command} during the turn"), |l| {
            l.any_contains(answer)
        })
        .await;
    }
    let log = h.channel.log();
    assert!(
        !log.any_contains("Cancelled."),
        "the turn still runs: {log}"
    );
    assert!(!log.any_contains("Cleared this conversation"), "{log}");
    h.channel.dm(1, "/stop").await;
    h.wait_for("the stopped turn", |l| l.any_contains("Cancelled."))
        .await;
    h.wait_for("the clear, after the turn", |l| {
        l.any_contains("Cleared this conversation")
    })
    .await;
    h.stop().await;
}

/// `/stop` leaves background tasks running; `/stop all` stops them too.
#[tokio::test]
async fn stop_all_also_stops_the_chats_background_tasks() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_bg",
        "exec_command",
        json!({"command": "echo waiting; sleep 60", "background": true}),
    )]));
    h.llm.push(Reply::text("Started."));
    h.llm.push(Reply::text("The task was cancelled."));
    h.channel.dm(1, "start the slow job").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the first answer", |l| l.has_text("Started."))
        .await;
    // Handled in arrival order: once `/whoami` is answered, `/stop` was too.
    h.channel.dm(1, "/stop").await;
    h.channel.dm(1, "/whoami").await;
    h.wait_for("the whoami after the stop", |l| {
        l.any_contains("(user id 1)")
    })
    .await;
    assert_eq!(
        task_status(&h).await,
        TaskStatus::Running,
        "the task runs on"
    );
    h.channel.dm(1, "/stop all").await;
    h.wait_for("the tasks stopped", |l| {
        l.any_contains("Stopped 1 background task.")
    })
    .await;
    h.wait_for("the cancelled task's notification answered", |l| {
        l.has_text("The task was cancelled.")
    })
    .await;
    assert_eq!(task_status(&h).await, TaskStatus::Cancelled);
    h.stop().await;
}

async fn task_status(h: &Harness) -> TaskStatus {
    let tasks = h.running.store.tasks().recent(None, 10).await.unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    tasks[0].status
}
