//! End to end: model errors and retries, messages during a pending approval,
//! cancelling a background task, and shutting down in the middle of a turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::e2e::{tool_result, Harness};
use support::fake_llm::{error_body, last_user_text, FakeLlm, Reply};
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
async fn a_message_sent_while_a_card_waits_is_answered_at_once() {
    // The turn ended at its card (it is a row now): the session takes the
    // next message at once, as a message (not as an edit), and the card still
    // resumes the paused turn afterwards.
    let h = Harness::start().await;
    h.llm.set_responder(|request| {
        let last = &request["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        if last["role"] == "tool" {
            return Reply::text("The command ran.");
        }
        let said = last_user_text(request).unwrap_or_default();
        if said.contains("run it") {
            return Reply::tool_calls([(
                "call_exec",
                "exec_command",
                json!({"command": "echo ok"}),
            )]);
        }
        Reply::text(&format!("echo: {said}"))
    });
    h.channel.dm(1, "run it").await;
    let card = h.channel.card().await;
    h.channel.dm(1, "are you there?").await;
    h.wait_for("the second message answered while the card waits", |l| {
        l.has_text("echo: are you there?")
    })
    .await;
    assert!(!h.channel.log().has_text("The command ran."));
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the paused turn's answer", |l| {
        l.has_text("The command ran.")
    })
    .await;
    h.idle().await;

    let requests = h.llm.requests().await;
    let resumed = requests.last().unwrap();
    let result = tool_result(resumed, "call_exec");
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
    let tasks = h
        .running
        .store
        .tasks()
        .of_session(&session, 10)
        .await
        .unwrap();
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

/// Sends each request, allows its card and waits for its answer; returns the
/// conversation's tasks, newest first.
async fn start_approved(h: &Harness, asks: &[(&str, &str)]) -> Vec<switchboard::store::TaskRecord> {
    let mut previous = None;
    for &(ask, answer) in asks {
        h.channel.dm(1, ask).await;
        let card = match previous {
            None => h.channel.card().await,
            Some(id) => h.channel.next_card(id).await,
        };
        previous = Some(card.id);
        h.channel.press(1, &card.action('y')).await;
        h.wait_for(answer, |l| l.has_text(answer)).await;
    }
    let session = h.session(1, 1).await;
    h.running
        .store
        .tasks()
        .of_session(&session, 10)
        .await
        .unwrap()
}

#[tokio::test]
async fn background_tasks_beyond_the_limit_wait_in_line() {
    let h = Harness::with(&[("MAX_BACKGROUND_TASKS", "1")]).await;
    h.llm.push(Reply::tool_calls([(
        "call_slow",
        "exec_command",
        json!({"command": "echo slow; sleep 60", "background": true}),
    )]));
    h.llm.push(Reply::text("Started the slow one."));
    h.llm.push(Reply::tool_calls([(
        "call_quick",
        "exec_command",
        json!({"command": "echo quick-done", "background": true}),
    )]));
    h.llm.push(Reply::text("Started the quick one."));
    h.llm.set_responder(|request| {
        let text = last_user_text(request).unwrap_or_default();
        Reply::text(if text.contains("status: cancelled") {
            "The slow one was cancelled."
        } else if text.contains("quick-done") {
            "The quick one finished."
        } else {
            "?"
        })
    });
    let tasks = start_approved(
        &h,
        &[
            ("start the slow job", "Started the slow one."),
            ("start the quick job", "Started the quick one."),
        ],
    )
    .await;
    let (quick, slow) = (tasks[0].clone(), tasks[1].clone());
    assert_eq!(slow.status, TaskStatus::Running);
    assert_eq!(quick.status, TaskStatus::Queued, "one at a time here");
    h.wait_for("the queued status message", |l| {
        l.any_contains("Queued: a conversation runs at most 1 background task(s) at once")
    })
    .await;
    h.channel.dm(1, "/tasks").await;
    h.wait_for("the listing", |l| {
        l.any_contains(&format!("`{}` exec_command — queued", quick.id.short()))
    })
    .await;

    // Cancelling the running task lets the queued one start and finish.
    h.channel
        .dm(1, &format!("/tasks cancel {}", slow.id.short()))
        .await;
    h.wait_for("both notification answers", |l| {
        l.has_text("The slow one was cancelled.") && l.has_text("The quick one finished.")
    })
    .await;
    let store = &h.running.store;
    let quick = store.tasks().get(&quick.id).await.unwrap().unwrap();
    assert_eq!(quick.status, TaskStatus::Succeeded);
    assert!(quick.result.unwrap().contains("quick-done"));
    assert_eq!(
        store.tasks().get(&slow.id).await.unwrap().unwrap().status,
        TaskStatus::Cancelled
    );
    h.stop().await;
}

#[tokio::test]
async fn a_queued_task_can_be_cancelled_before_it_starts() {
    let h = Harness::with(&[("MAX_BACKGROUND_TASKS", "1")]).await;
    for (id, command) in [("call_a", "sleep 60"), ("call_b", "echo never > never.txt")] {
        h.llm.push(Reply::tool_calls([(
            id,
            "exec_command",
            json!({"command": command, "background": true}),
        )]));
        h.llm.push(Reply::text(&format!("Started {id}.")));
    }
    h.llm.set_responder(|_| Reply::text("Noted."));
    let tasks = start_approved(
        &h,
        &[("first", "Started call_a."), ("second", "Started call_b.")],
    )
    .await;
    let queued = tasks[0].clone();
    assert_eq!(queued.status, TaskStatus::Queued);
    h.channel
        .dm(1, &format!("/tasks cancel {}", queued.id.short()))
        .await;
    h.wait_for("the cancelled status message", |l| {
        l.any_contains(&format!(
            "Background task `{}` · exec_command · cancelled",
            queued.id.short()
        ))
    })
    .await;
    let stored = h
        .running
        .store
        .tasks()
        .get(&queued.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, TaskStatus::Cancelled);
    assert!(
        !h.workspace().join("never.txt").exists(),
        "a cancelled queued task never runs"
    );
    h.stop().await;
}

#[tokio::test]
async fn an_overloaded_endpoint_hands_the_turn_to_the_fallback() {
    let backup = FakeLlm::start().await;
    backup.set_responder(|request| {
        Reply::text(&format!(
            "backup: {}",
            last_user_text(request).unwrap_or_default()
        ))
    });
    let h = Harness::with(&[
        ("LLM_FALLBACK_1_BASE_URL", &backup.base_url()),
        ("LLM_FALLBACK_1_MODEL", "backup-model"),
    ])
    .await;
    let overloaded = error_body("The server is overloaded.", "server_error", None);
    h.llm.push(Reply::status(503, overloaded));
    h.channel.dm(1, "first").await;
    h.wait_for("the backup's answer", |l| l.has_text("backup: first"))
        .await;
    // The primary is passed over for a while: the next turn goes straight on.
    h.channel.dm(1, "second").await;
    h.wait_for("the second answer", |l| l.has_text("backup: second"))
        .await;
    h.idle().await;
    assert_eq!(h.llm.requests().await.len(), 1, "primary tried once");
    let sent = backup.requests().await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["model"], "backup-model");
    h.channel.dm(1, "/model").await;
    h.wait_for("the model in use", |l| {
        l.any_contains("Model: `backup-model`")
            && l.any_contains(
                "fallback 1 in use (`backup-model`): the primary `fake-model` failed recently",
            )
    })
    .await;
    h.stop().await;
}

#[tokio::test]
async fn a_configuration_error_is_not_handed_to_the_fallback() {
    let backup = FakeLlm::start().await;
    backup.set_responder(|_| Reply::text("should not answer"));
    let h = Harness::with(&[
        ("LLM_FALLBACK_1_BASE_URL", &backup.base_url()),
        ("LLM_FALLBACK_1_MODEL", "backup-model"),
    ])
    .await;
    let bad_key = error_body(
        "Incorrect API key provided.",
        "invalid_request_error",
        Some("invalid_api_key"),
    );
    h.llm.push(Reply::status(401, bad_key));
    h.channel.dm(1, "hello").await;
    h.wait_for("the refusal", |l| l.any_contains("refused the request"))
        .await;
    h.idle().await;
    assert!(
        backup.requests().await.is_empty(),
        "a bad key is not retried elsewhere"
    );
    h.stop().await;
}
