//! End to end: model errors and retries, messages during a pending approval,
//! cancelling a background task, and shutting down in the middle of a turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use serde_json::json;
use support::e2e::{tool_result, Harness};
use support::fake_llm::{error_body, last_user_text, Reply};
use switchboard::store::TaskStatus;

#[tokio::test]
async fn a_transient_server_error_is_retried_and_a_refusal_is_explained() {
    let h = Harness::start().await;
    let overloaded = error_body("The server is overloaded.", "server_error", None);
    h.llm.push(Reply::status(503, overloaded));
    h.llm.push(Reply::text("Answered after a retry."));
    h.channel.dm(1, "hello").await;
    h.wait_for("the retried answer", |l| {
        l.has_text("Answered after a retry.")
    })
    .await;
    h.idle().await;
    assert_eq!(h.llm.requests().await.len(), 2, "one retry");

    let bad_key = error_body(
        "Incorrect API key provided.",
        "invalid_request_error",
        Some("invalid_api_key"),
    );
    h.llm.push(Reply::status(401, bad_key));
    h.channel.dm(1, "hello again").await;
    let log = h
        .wait_for("the refusal", |l| l.any_contains("refused the request"))
        .await;
    let notice = log.find("refused the request").unwrap();
    assert!(
        notice.text.contains("HTTP 401") && notice.text.contains("switchboard doctor"),
        "{}",
        notice.text
    );
    assert!(
        !notice.text.contains("Incorrect API key"),
        "provider details stay in the logs"
    );
    h.idle().await;
    assert_eq!(h.llm.requests().await.len(), 3, "a refusal is not retried");
    h.stop().await;
}

#[tokio::test]
async fn a_message_sent_while_a_card_waits_is_answered_after_the_turn() {
    let h = Harness::start().await;
    h.llm.set_responder(|request| {
        Reply::text(&format!(
            "echo: {}",
            last_user_text(request).unwrap_or_default()
        ))
    });
    h.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({"command": "echo ok"}),
    )]));
    h.llm.push(Reply::text("The command ran."));
    h.channel.dm(1, "run it").await;
    let card = h.channel.card().await;
    h.channel.dm(1, "are you there?").await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("both answers", |l| l.has_text("echo: are you there?"))
        .await;
    h.idle().await;

    let log = h.channel.log();
    let texts = log.texts_in(1);
    let ran = texts.iter().position(|t| t == "The command ran.").unwrap();
    let echoed = texts
        .iter()
        .position(|t| t == "echo: are you there?")
        .unwrap();
    assert!(
        ran < echoed,
        "queued behind the turn, not taken as an edit: {texts:?}"
    );
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.ends_with("output:\nok\n"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn a_background_task_can_be_listed_and_cancelled() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_bg",
        "exec_command",
        json!({"command": "echo waiting; sleep 30", "background": true}),
    )]));
    h.llm.push(Reply::text("Started."));
    h.llm.push(Reply::text("The task was cancelled."));
    h.channel.dm(1, "start the slow job").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the first answer", |l| l.has_text("Started."))
        .await;

    h.channel.dm(1, "/tasks").await;
    let log = h
        .wait_for("the task list", |l| l.any_contains("**Background tasks**"))
        .await;
    let list = log.find("**Background tasks**").unwrap().text.clone();
    assert!(
        list.contains("exec_command") && list.contains("running"),
        "{list}"
    );
    let short = list.split('`').nth(1).unwrap().to_owned();
    assert_eq!(short.len(), 8, "{list}");

    h.channel.dm(1, &format!("/tasks cancel {short}")).await;
    h.wait_for("the cancel confirmation", |l| {
        l.any_contains(&format!("Cancelling task `{short}`"))
    })
    .await;
    h.wait_for("the notification answer", |l| {
        l.has_text("The task was cancelled.")
    })
    .await;
    let log = h
        .wait_for("the status message", |l| {
            l.any_contains(&format!(
                "Background task `{short}` · exec_command · cancelled"
            ))
        })
        .await;
    assert!(log.any_contains("cancelled"));
    let requests = h.requests(3).await;
    let notification = last_user_text(&requests[2]).unwrap();
    assert!(notification.contains("status: cancelled"), "{notification}");
    let session = h.session(1, 1).await;
    let tasks = h.running.store.session_tasks(&session.0, 10).await.unwrap();
    assert_eq!(tasks[0].status, TaskStatus::Cancelled);
    h.stop().await;
}

#[tokio::test]
async fn shutdown_in_the_middle_of_a_turn_ends_promptly() {
    let h = Harness::start().await;
    h.llm.push(Reply::text("This never ends").then_stall());
    h.channel.dm(1, "hello").await;
    h.wait_for("the draft", |l| l.any_contains("This never"))
        .await;
    h.shutdown.cancel();
    // Generous: a liveness check (the model would stall for 10 s), not a timing.
    let stopped = tokio::time::timeout(Duration::from_secs(5), h.running.wait()).await;
    assert!(
        stopped.is_ok(),
        "the gateway stopped without waiting for the model"
    );
}
