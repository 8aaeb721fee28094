//! `/queue` modes with three messages sent while a turn runs (a tool that
//! hangs until `/stop`, or a model that stalls): followup answers each in
//! order, collect answers the three in one next turn, interrupt stops the
//! running turn for the new message. None is lost, none answered twice.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use support::e2e::{messages, Harness};
use support::fake_llm::{last_user_text, Reply};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

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

/// "go" starts a web fetch that hangs; every other message is echoed back.
fn model(h: &Harness, url: String) {
    h.llm.set_responder(move |request: &Value| {
        let last = messages(request).last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            return Reply::text("Fetched.");
        }
        let said = last_user_text(request).unwrap_or_default();
        if said == "go" {
            Reply::tool_calls([(
                "call_1",
                "web_fetch",
                json!({ "url": format!("{url}/slow") }),
            )])
        } else {
            Reply::text(&format!("Echo: {}", said.replace("\n\n", " + ")))
        }
    });
}

/// Sets `mode`, starts the hanging turn, sends one, two and three while it
/// runs, then `/stop` (not in interrupt mode: "one" stopped it, and a stop
/// then could catch the turn of "three").
async fn three_mid_turn(mode: &str) -> Harness {
    let (url, mut accepted) = hanging_server().await;
    let h = Harness::with(&[("WEB_FETCH_ALLOW", "127.0.0.1")]).await;
    model(&h, url);
    h.channel.dm(1, &format!("/queue {mode}")).await;
    h.wait_for("the mode", |l| {
        l.any_contains(&format!("Queue mode: **{mode}**"))
    })
    .await;
    h.channel.dm(1, "go").await;
    accepted.recv().await.unwrap();
    for text in ["one", "two", "three"] {
        h.channel.dm(1, text).await;
    }
    if mode != "interrupt" {
        h.channel.dm(1, "/stop").await;
    }
    h
}

fn answers(h: &Harness) -> Vec<String> {
    h.channel
        .log()
        .texts()
        .into_iter()
        .filter(|t| t.starts_with("Echo: "))
        .collect()
}

#[tokio::test]
async fn followup_answers_each_message_in_order() {
    let h = three_mid_turn("followup").await;
    h.wait_for("three answers", |l| l.any_contains("Echo: three"))
        .await;
    h.idle().await;
    assert_eq!(answers(&h), ["Echo: one", "Echo: two", "Echo: three"]);
    h.stop().await;
}

#[tokio::test]
async fn collect_answers_the_messages_together_in_one_turn() {
    let h = three_mid_turn("collect").await;
    h.wait_for("the collected answer", |l| l.any_contains("Echo: one"))
        .await;
    h.idle().await;
    assert_eq!(answers(&h), ["Echo: one + two + three"]);
    let session = h.session(1, 1).await;
    let history = h
        .running
        .store
        .history()
        .recent(&session, 50)
        .await
        .unwrap();
    let user_texts: Vec<String> = history
        .iter()
        .filter(|m| m.role == switchboard::llm::Role::User)
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(
        user_texts.last().unwrap(),
        "one\n\ntwo\n\nthree",
        "{user_texts:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn interrupt_stops_the_running_turn_for_the_new_message() {
    let h = three_mid_turn("interrupt").await;
    h.wait_for("the last answer", |l| l.any_contains("Echo: three"))
        .await;
    h.idle().await;
    let log = h.channel.log();
    assert!(
        log.any_contains("Cancelled."),
        "the hanging turn was stopped\n{log}"
    );
    assert!(!log.any_contains("Fetched."), "{log}");
    // Each later message either answered or, stopped by the next, cancelled:
    // none dropped, none answered twice.
    let answered = answers(&h);
    let mut sorted = answered.clone();
    sorted.dedup();
    assert_eq!(sorted, answered, "none twice");
    assert_eq!(answered.last().map(String::as_str), Some("Echo: three"));
    // Four turns (go, one, two, three), each ending once: stopped by the
    // next message, or answered.
    let ended = log
        .texts()
        .iter()
        .filter(|t| *t == "Cancelled." || t.starts_with("Echo: "))
        .count();
    assert_eq!(ended, 4, "{log}");
    h.stop().await;
}
