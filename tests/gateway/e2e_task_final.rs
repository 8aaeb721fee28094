//! End to end: a finished background task shows its end, not its last
//! progress — `/tasks` said `succeeded 66% · running` and `cancelled · running`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;
use switchboard::store::{TaskRecord, TaskStatus};

/// Starts `command` in the background, approves it, and returns the task id
/// once the model has been told it started.
async fn start(h: &Harness, command: &str) -> String {
    h.llm.push(Reply::tool_calls([(
        "call_bg",
        "exec_command",
        json!({ "command": command, "background": true, "notify": "silent" }),
    )]));
    h.llm.push(Reply::text("Started."));
    h.channel.dm(1, "run it in the background").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the first answer", |l| l.has_text("Started."))
        .await;
    let started = tool_result(&h.requests(2).await[1], "call_bg");
    started
        .trim_start_matches("Started background task ")
        .split('.')
        .next()
        .unwrap()
        .to_owned()
}

/// Polls the task until `done` holds for it.
async fn task_until(h: &Harness, id: &str, what: &str, done: impl Fn(&TaskRecord) -> bool) {
    for _ in 0..400 {
        let task = h
            .running
            .store
            .tasks()
            .get(&id.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        if done(&task) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let task = h
        .running
        .store
        .tasks()
        .get(&id.parse().unwrap())
        .await
        .unwrap();
    panic!("task {id} never {what}: {task:?}");
}

/// `/tasks` in the chat: the line of task `id`.
async fn tasks_line(h: &Harness, id: &str) -> String {
    let short = &id[..8];
    h.channel.dm(1, "/tasks").await;
    let log = h
        .wait_for("the /tasks list", |l| {
            l.texts()
                .iter()
                .any(|t| t.contains(&format!("`{short}`")) && t.contains("**Background tasks**"))
        })
        .await;
    let list = log
        .texts()
        .into_iter()
        .rev()
        .find(|t| t.contains("**Background tasks**"))
        .unwrap();
    list.lines().find(|l| l.contains(short)).unwrap().to_owned()
}

#[tokio::test]
async fn a_task_that_succeeded_shows_100_percent_and_no_running_stage() {
    let h = Harness::start().await;
    let id = start(&h, "echo step 66%; sleep 3; echo all-done").await;
    task_until(&h, &id, "reported 66%", |t| t.percent == Some(66)).await;
    task_until(&h, &id, "finished", |t| t.status.is_finished()).await;
    let task = h
        .running
        .store
        .tasks()
        .get(&id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(task.status, TaskStatus::Succeeded);
    assert_eq!(task.percent, Some(100), "{task:?}");
    assert_eq!(task.stage, "succeeded", "{task:?}");
    assert!(task.detail.is_empty(), "{task:?}");
    let line = tasks_line(&h, &id).await;
    assert!(line.contains("succeeded 100%"), "{line}");
    assert!(!line.contains("running") && !line.contains("66%"), "{line}");
    h.stop().await;
}

#[tokio::test]
async fn a_cancelled_task_says_cancelled_where_it_stopped_not_running() {
    let h = Harness::start().await;
    let id = start(&h, "echo step 40%; sleep 60").await;
    task_until(&h, &id, "reported 40%", |t| t.percent == Some(40)).await;
    h.channel
        .dm(1, &format!("/tasks cancel {}", &id[..8]))
        .await;
    task_until(&h, &id, "finished", |t| t.status.is_finished()).await;
    let task = h
        .running
        .store
        .tasks()
        .get(&id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled, "{task:?}");
    assert_eq!(task.stage, "cancelled", "{task:?}");
    let line = tasks_line(&h, &id).await;
    assert!(line.contains("cancelled 40%"), "{line}");
    assert!(!line.contains("running"), "{line}");
    h.stop().await;
}
