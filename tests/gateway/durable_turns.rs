//! Durable turns: paused approvals and ask_user questions survive a restart, two
//! gateways on one database execute an approved call once, schedules fire once
//! per occurrence, and tasks left by a dead process are reported.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use support::fake_llm::{FakeLlm, Reply};
use support::postgres::fresh_postgres;
use support::test_channel::{dm_chat, user, TestChannel};
use switchboard::clock::{Clock, ManualClock, SystemClock};
use switchboard::memory::{terms, MEMORY_NOTE};
use switchboard::store::{
    Conversation, MemoryKind, MemoryOwner, NewMemory, OccurrencePlan, ScheduleRecord, SessionKey,
    Store, TaskRecord, TaskStatus,
};
use switchboard::{Config, Running};
use switchboard_platform::{Capabilities, ChatId, ChatKind, Platform, PlatformAdapter, UserId};
use tokio_util::sync::CancellationToken;

/// One gateway process: the real core on a shared data dir.
struct Instance {
    channel: Arc<TestChannel>,
    running: Running,
    shutdown: CancellationToken,
}

/// One test's database: a SQLite file, or a fresh PostgreSQL database.
#[derive(Clone)]
struct Db {
    url: String,
    dir: PathBuf,
}

/// The databases every test runs on: a SQLite file always, and a fresh
/// PostgreSQL database when `TEST_DATABASE_URL` is set (CI sets it).
async fn databases(dir: &Path) -> Vec<Db> {
    let sqlite = dir.join("sqlite");
    let mut dbs = vec![Db {
        url: format!("sqlite://{}", sqlite.join("data/switchboard.db").display()),
        dir: sqlite,
    }];
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        dbs.push(Db {
            url: fresh_postgres(&admin).await,
            dir: dir.join("postgres"),
        });
    }
    dbs
}

fn config(llm: &FakeLlm, db: &Db) -> Config {
    config_with(llm, db, &[])
}

fn config_with(llm: &FakeLlm, db: &Db, extra: &[(&str, &str)]) -> Config {
    let dir = db.dir.as_path();
    let data = dir.join("data");
    let map: HashMap<String, String> = [
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "fake-model".to_owned()),
        ("DATA_DIR", data.display().to_string()),
        ("DATABASE_URL", db.url.clone()),
        ("WORKSPACE_DIR", dir.join("ws").display().to_string()),
        ("ACCESS_POLICY", "open".to_owned()),
        ("APPROVAL_TIMEOUT", "60".to_owned()),
        // Activity lines have tests of their own.
        ("CHAT_VERBOSITY", "off".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .chain(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    )
    .collect();
    Config::from_lookup(|k| map.get(k).cloned()).unwrap()
}

async fn instance(llm: &FakeLlm, db: &Db) -> Instance {
    instance_with_clock(llm, db, Arc::new(SystemClock)).await
}

async fn instance_with_clock(llm: &FakeLlm, db: &Db, clock: Arc<dyn Clock>) -> Instance {
    instance_on(llm, db, clock, TestChannel::new()).await
}

async fn instance_on(
    llm: &FakeLlm,
    db: &Db,
    clock: Arc<dyn Clock>,
    channel: Arc<TestChannel>,
) -> Instance {
    start_instance(config(llm, db), clock, channel).await
}

async fn start_instance(
    config: Config,
    clock: Arc<dyn Clock>,
    channel: Arc<TestChannel>,
) -> Instance {
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![channel.clone()];
    let running = switchboard::start_with_clock(&config, adapters, shutdown.clone(), clock)
        .await
        .unwrap();
    Instance {
        channel,
        running,
        shutdown,
    }
}

impl Instance {
    async fn stop(self) {
        self.shutdown.cancel();
        self.running.wait().await;
    }
}

fn exec_call(id: &str, command: &str) -> Reply {
    Reply::tool_calls(vec![(id, "exec_command", json!({ "command": command }))])
}

/// The text of the last tool message the model received in `request`.
fn last_tool_result(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn lines(path: PathBuf) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A sub-agent that acts pauses on its card like the main agent: the
/// delegating turn is stored around it, and after a restart the requester's
/// press (not someone else's) resumes both, the command running once.
#[tokio::test]
async fn a_sub_agents_card_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_sub_agents_card_survives_a_restart_on(&db).await;
    }
}

async fn a_sub_agents_card_survives_a_restart_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let vars = [("SUBAGENTS", "research,operations")];
    let start = |llm: &FakeLlm| {
        start_instance(
            config_with(llm, db, &vars),
            Arc::new(SystemClock),
            TestChannel::new(),
        )
    };
    llm.push(Reply::tool_calls(vec![(
        "call_d",
        "delegate_to_operations",
        json!({"task": "Record the word acted in ran.txt."}),
    )]));
    llm.push(exec_call("sub_1", "echo acted >> ran.txt"));
    let first = start(&llm).await;
    first.channel.dm(1, "record acted please").await;
    let card = first.channel.card().await;
    assert!(card.text.contains("for a sub-agent"), "{}", card.text);
    assert!(card.text.contains("echo acted"), "{}", card.text);
    first.stop().await;
    assert_eq!(
        lines(db.dir.join("ws/users/console-1/ran.txt")),
        0,
        "nothing ran before the press"
    );

    llm.push(Reply::text("Wrote acted to ran.txt."));
    llm.push(Reply::text("Done: the operations sub-agent wrote acted."));
    let second = start(&llm).await;
    // Someone else in the same chat presses first: it decides nothing.
    second
        .channel
        .press_on(2, &card.action('y'), dm_chat(1), card.id)
        .await;
    second
        .channel
        .wait_for("the refusal", |l| {
            l.answers().iter().any(|(u, _, a)| {
                u.0 == 2
                    && matches!(a, switchboard_platform::PressAnswer::Private(t) if t.contains("Only the person who asked"))
            })
        })
        .await;
    second.channel.press(1, &card.action('y')).await;
    let log = second
        .channel
        .wait_for("the resumed answer", |l| {
            l.has_text("Done: the operations sub-agent wrote acted.")
        })
        .await;
    assert_eq!(
        log.find("Done: the operations sub-agent wrote acted.")
            .unwrap()
            .chat,
        dm_chat(1)
    );
    assert_eq!(
        lines(db.dir.join("ws/users/console-1/ran.txt")),
        1,
        "the command ran once"
    );
    let requests = llm.requests().await;
    let n = requests.len();
    // The sub-agent continued its own conversation: its task, its call, the result.
    let sub = &requests[n - 2];
    let sub_messages = sub["messages"].as_array().unwrap();
    assert!(
        sub_messages.iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.contains("Record the word acted"))),
        "{sub}"
    );
    assert_eq!(
        sub_messages.last().unwrap()["tool_call_id"],
        "sub_1",
        "the sub-agent's call ran and its result came back to it: {sub}"
    );
    // And the main turn got its findings.
    let main = &requests[n - 1];
    let findings = last_tool_result(main);
    assert!(findings.contains("Wrote acted to ran.txt."), "{findings}");
    second.stop().await;
}

#[tokio::test]
async fn an_approval_pressed_after_a_restart_resumes_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        an_approval_pressed_after_a_restart_resumes_the_turn_on(&db).await;
    }
}

async fn an_approval_pressed_after_a_restart_resumes_the_turn_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(exec_call("call_1", "echo resumed-after-restart"));
    let first = instance(&llm, &db).await;
    // A memory the request recalls: the turn's input is wrapped with it and
    // the system prompt gains a note; the resumed turn must keep both as they
    // were and still save the plain input.
    let fact = "The user's echo commands are for testing restarts";
    first
        .running
        .store
        .memories()
        .insert(
            MemoryOwner::new(Platform::Console, UserId(1)),
            &NewMemory {
                kind: MemoryKind::Fact,
                content: fact.into(),
                source_ref: "test".into(),
                importance: 0.9,
                expires_at: None,
            },
            &terms(fact),
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    let asked = first.channel.dm(1, "please run the echo").await;
    let card = first.channel.card().await;
    first.stop().await;

    // A fresh process on the same database: the button still works.
    llm.push(Reply::text("It printed resumed-after-restart."));
    let second = instance(&llm, &db).await;
    second.channel.press(1, &card.action('y')).await;
    let log = second
        .channel
        .wait_for("the resumed answer", |l| {
            l.has_text("It printed resumed-after-restart.")
        })
        .await;
    let answer = log.find("It printed resumed-after-restart.").unwrap();
    assert_eq!(answer.chat, dm_chat(1), "answer goes to the original chat");
    let reply_to = log.ops.iter().find_map(|op| match op {
        support::test_channel::Op::Send { id, reply_to, .. } if *id == answer.id => Some(*reply_to),
        _ => None,
    });
    assert_eq!(
        reply_to,
        Some(Some(asked)),
        "and replies to the original message"
    );
    let requests = llm.requests().await;
    assert!(
        last_tool_result(requests.last().unwrap()).contains("resumed-after-restart"),
        "the tool really ran"
    );
    let (asking, resumed) = (&requests[requests.len() - 2], requests.last().unwrap());
    assert!(
        asking["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains(MEMORY_NOTE),
        "the first request had the memory note: {asking}"
    );
    assert_eq!(
        resumed["messages"][0], asking["messages"][0],
        "the resumed turn keeps the system prompt"
    );
    let user_message = |r: &serde_json::Value| {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .cloned()
            .unwrap()
    };
    assert!(user_message(resumed)["content"]
        .as_str()
        .unwrap()
        .contains(fact));
    // The answer streams before it is saved; wait for the saved exchange.
    let session = session(&second, 1).await;
    let saved = async {
        loop {
            let history = second
                .running
                .store
                .history()
                .recent(&session, 50)
                .await
                .unwrap();
            if history
                .iter()
                .any(|m| m.content == "It printed resumed-after-restart.")
            {
                return history;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let history = tokio::time::timeout(Duration::from_secs(20), saved)
        .await
        .expect("the resumed turn is saved");
    assert!(
        history
            .iter()
            .any(|m| m.content.contains("please run the echo")),
        "the whole turn is saved once"
    );
    assert_eq!(
        history
            .iter()
            .filter(|m| m.content.contains("please run the echo"))
            .count(),
        1
    );
    assert!(
        history.iter().any(|m| m.content == "please run the echo"),
        "history keeps the plain input, not the recalled memories: {history:?}"
    );
    second.stop().await;
}

async fn session(i: &Instance, user: i64) -> switchboard::store::SessionId {
    let key = SessionKey {
        platform: Platform::Console,
        chat: ChatId(user),
        thread: None,
        user: UserId(user),
    };
    i.running.store.sessions().open(&key).await.unwrap()
}

#[tokio::test]
async fn an_approval_that_lost_its_card_still_expires_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        an_approval_that_lost_its_card_still_expires_after_a_restart_on(&db).await;
    }
}

async fn an_approval_that_lost_its_card_still_expires_after_a_restart_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(exec_call("call_1", "echo never-run"));
    let first = instance(&llm, &db).await;
    first.channel.dm(1, "please run the echo").await;
    first.channel.card().await;
    first.stop().await;
    // The process died after showing the card but before storing its id, and
    // the approval's time ran out meanwhile.
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    sqlx::query("UPDATE approvals SET card_message_id = NULL")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    llm.push(Reply::text("It expired, so nothing ran."));
    // The replacement starts after the approval's 60 s ran out.
    let clock = Arc::new(ManualClock::default());
    clock.advance(Duration::from_secs(61));
    let second = instance_with_clock(&llm, &db, clock.clone()).await;
    second
        .channel
        .wait_for("the resumed answer", |l| {
            l.has_text("It expired, so nothing ran.")
        })
        .await;
    let requests = llm.requests().await;
    let result = last_tool_result(requests.last().unwrap());
    assert!(result.contains("approval expired"), "{result}");
    let pending = second
        .running
        .store
        .approvals()
        .due(clock.now())
        .await
        .unwrap();
    assert!(pending.is_empty(), "no approval stays pending: {pending:?}");
    second.stop().await;
}

#[tokio::test]
async fn a_message_queued_at_shutdown_is_answered_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_message_queued_at_shutdown_is_answered_after_the_restart_on(&db).await;
    }
}

async fn inbox_rows(url: &str) -> i64 {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM inbox")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    n
}

async fn a_message_queued_at_shutdown_is_answered_after_the_restart_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    // The first message's turn hangs in the model; the second waits behind it.
    llm.push(Reply::text("Thinking").then_stall());
    let first = instance(&llm, &db).await;
    first.channel.dm(1, "first question").await;
    while llm.requests().await.is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.channel.dm(1, "second question").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while inbox_rows(&db.url).await < 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second message was never stored"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.stop().await;

    // The cut-short turn had run nothing with side effects: it runs again,
    // then the queued message gets its turn.
    llm.push(Reply::text("Answering the first question."));
    llm.push(Reply::text("Answering the second question."));
    let second = instance(&llm, &db).await;
    let log = second
        .channel
        .wait_for("both answers", |l| {
            l.has_text("Answering the first question.")
                && l.has_text("Answering the second question.")
        })
        .await;
    let answer = log.find("Answering the second question.").unwrap();
    assert_eq!(answer.chat, dm_chat(1));
    let requests = llm.requests().await;
    assert_eq!(requests.len(), 3, "the cut-short turn ran once more");
    let asked = support::fake_llm::last_user_text(&requests[1]).unwrap();
    assert!(asked.contains("first question"), "{asked}");
    let asked = support::fake_llm::last_user_text(&requests[2]).unwrap();
    assert!(asked.contains("second question"), "{asked}");
    second.running.idle().await;
    assert_eq!(inbox_rows(&db.url).await, 0, "the inbox is empty again");
    second.stop().await;
}

#[tokio::test]
async fn a_resumed_turn_cut_short_after_its_allowed_call_is_reported_not_run_twice() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_resumed_turn_cut_short_is_reported_on(&db).await;
    }
}

async fn a_resumed_turn_cut_short_is_reported_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    // The allowed command runs, then the model hangs: the gateway stops.
    llm.push(exec_call("call_x", "echo ran >> ran.txt"));
    llm.push(Reply::text("Almost").then_stall());
    let first = instance(&llm, &db).await;
    let asked = first.channel.dm(1, "append to ran.txt").await;
    let card = first.channel.card().await;
    first.channel.press(1, &card.action('y')).await;
    while llm.requests().await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.stop().await;

    let second = instance(&llm, &db).await;
    let log = second
        .channel
        .wait_for("the interruption notice", |l| {
            l.any_contains("was interrupted")
        })
        .await;
    let notice = log.find("was interrupted").unwrap();
    assert!(
        notice.text.contains("after `exec_command` was allowed"),
        "{}",
        notice.text
    );
    let reply_to = log.ops.iter().find_map(|op| match op {
        support::test_channel::Op::Send { id, reply_to, .. } if *id == notice.id => Some(*reply_to),
        _ => None,
    });
    assert_eq!(reply_to, Some(Some(asked)), "it answers the request");
    second.running.idle().await;
    assert_eq!(llm.requests().await.len(), 2, "not run again");
    assert_eq!(
        lines(db.dir.join("ws/users/console-1/ran.txt")),
        1,
        "the command ran once"
    );
    second.stop().await;
}

#[tokio::test]
async fn a_turn_cut_short_after_a_side_effect_is_reported_not_run_twice() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_turn_cut_short_after_a_side_effect_is_reported_not_run_twice_on(&db).await;
    }
}

async fn a_turn_cut_short_after_a_side_effect_is_reported_not_run_twice_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    // `remember` writes a memory (a side effect), then the model hangs.
    llm.push(Reply::tool_calls(vec![(
        "c_rem",
        "remember",
        json!({"content": "The user likes green tea."}),
    )]));
    llm.push(Reply::text("Noting").then_stall());
    let first = instance(&llm, &db).await;
    first.channel.dm(1, "remember that I like green tea").await;
    while llm.requests().await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        inbox_rows(&db.url).await,
        1,
        "the running turn's message is kept"
    );
    first.stop().await;

    let second = instance(&llm, &db).await;
    let log = second
        .channel
        .wait_for("the interruption notice", |l| {
            l.any_contains("was interrupted")
        })
        .await;
    let notice = log.find("was interrupted").unwrap();
    assert!(notice.text.contains("`remember`"), "{}", notice.text);
    assert_eq!(notice.chat, dm_chat(1));
    second.running.idle().await;
    assert_eq!(llm.requests().await.len(), 2, "not run again");
    // The row goes once the chat was told.
    let mut rows = inbox_rows(&db.url).await;
    for _ in 0..100 {
        if rows == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        rows = inbox_rows(&db.url).await;
    }
    assert_eq!(rows, 0);
    let events = second.running.store.audit().recent(20).await.unwrap();
    assert!(events.iter().any(|e| e.kind == "turn.interrupted"));
    second.stop().await;
}

#[tokio::test]
async fn an_edit_pressed_before_a_restart_takes_the_next_message_after_it() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        an_edit_pressed_before_a_restart_takes_the_next_message_after_it_on(&db).await;
    }
}

async fn an_edit_pressed_before_a_restart_takes_the_next_message_after_it_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(exec_call("call_1", "echo original"));
    let first = instance(&llm, &db).await;
    first.channel.dm(1, "please run the echo").await;
    let card = first.channel.card().await;
    first.channel.press(1, &card.action('e')).await;
    first
        .channel
        .wait_for("the card sent back for editing", |l| {
            l.any_contains("send the new arguments")
        })
        .await;
    first.stop().await;

    llm.push(Reply::text("It printed the edited text."));
    let second = instance(&llm, &db).await;
    // The restarted gateway still waits for the new command.
    second.channel.dm(1, "echo edited-after-restart").await;
    let new_card = second.channel.card().await;
    assert!(
        new_card.text.contains("echo edited-after-restart"),
        "{}",
        new_card.text
    );
    second.channel.press(1, &new_card.action('y')).await;
    second
        .channel
        .wait_for("the answer", |l| l.has_text("It printed the edited text."))
        .await;
    let requests = llm.requests().await;
    assert_eq!(
        requests.len(),
        2,
        "the edit text never reached the model as a request"
    );
    let result = last_tool_result(requests.last().unwrap());
    assert!(result.contains("edited-after-restart"), "{result}");
    second.stop().await;
}

#[tokio::test]
async fn a_denial_after_a_restart_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_denial_after_a_restart_reaches_the_model_on(&db).await;
    }
}

async fn a_denial_after_a_restart_reaches_the_model_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(exec_call("call_1", "rm -rf build"));
    let first = instance(&llm, &db).await;
    first.channel.dm(1, "clean up").await;
    let card = first.channel.card().await;
    first.stop().await;

    llm.push(Reply::text("Understood, I left it alone."));
    let second = instance(&llm, &db).await;
    second.channel.press(1, &card.action('n')).await;
    second
        .channel
        .wait_for("the answer", |l| l.has_text("Understood, I left it alone."))
        .await;
    let requests = llm.requests().await;
    assert!(last_tool_result(requests.last().unwrap()).contains("denied"));
    second.stop().await;
}

#[tokio::test]
async fn an_ask_user_answer_after_a_restart_is_delivered_as_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        an_ask_user_answer_after_a_restart_is_delivered_as_the_answer_on(&db).await;
    }
}

async fn an_ask_user_answer_after_a_restart_is_delivered_as_the_answer_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(Reply::tool_calls(vec![(
        "call_q",
        "ask_user",
        json!({ "question": "Which environment?" }),
    )]));
    let first = instance(&llm, &db).await;
    first.channel.dm(1, "deploy it").await;
    first
        .channel
        .wait_for("the question", |l| l.any_contains("Which environment?"))
        .await;
    first.stop().await;

    llm.push(Reply::text("Deploying to staging."));
    let second = instance(&llm, &db).await;
    second.channel.dm(1, "yes").await;
    second
        .channel
        .wait_for("the answer", |l| l.has_text("Deploying to staging."))
        .await;
    let requests = llm.requests().await;
    let last_user = requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_owned();
    assert!(
        last_user.contains("Which environment?") && last_user.ends_with("yes"),
        "{last_user}"
    );
    second.stop().await;
}

#[tokio::test]
async fn two_instances_pressing_the_same_approval_execute_it_once() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        two_instances_pressing_the_same_approval_execute_it_once_on(&db).await;
    }
}

async fn two_instances_pressing_the_same_approval_execute_it_once_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(exec_call("call_1", "echo ran >> runs.txt"));
    llm.set_responder(|_| Reply::text("Done once."));
    let a = instance(&llm, &db).await;
    let b = instance(&llm, &db).await;
    a.channel.dm(1, "record a run").await;
    let card = a.channel.card().await;
    let action = card.action('y');
    tokio::join!(a.channel.press(1, &action), b.channel.press(1, &action));
    let answered = |l: &support::test_channel::Log| l.has_text("Done once.");
    // The turn lives in A; whichever process won the decision resumes it.
    tokio::select! {
        _ = a.channel.wait_for("an answer in A", answered) => {}
        _ = b.channel.wait_for("an answer in B", answered) => {}
    }
    // Let any duplicate show up before counting.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        lines(db.dir.join("ws/users/console-1/runs.txt")),
        1,
        "the command ran exactly once"
    );
    let answers = a.channel.log().count_containing("Done once.")
        + b.channel.log().count_containing("Done once.");
    assert_eq!(answers, 1, "one answer");
    let refused = a.channel.log().answers().len() + b.channel.log().answers().len();
    assert_eq!(refused, 2, "both presses were answered");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_turn_resumed_by_another_instance_leaves_what_it_said_in_the_first() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_turn_resumed_by_another_instance_leaves_what_it_said_in_the_first_on(&db).await;
    }
}

async fn a_turn_resumed_by_another_instance_leaves_what_it_said_in_the_first_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(Reply::text_then_tool_calls(
        "Let me run it.",
        vec![(
            "call_1",
            "exec_command",
            json!({ "command": "echo handed-over" }),
        )],
    ));
    llm.set_responder(|_| Reply::text("It printed handed-over."));
    // A streams slowly (one edit a minute), so what it said before the card is
    // not on screen yet when the turn moves to B.
    let slow = TestChannel::with_capabilities(Capabilities {
        min_edit_interval: Duration::from_secs(60),
        ..TestChannel::new().capabilities().clone()
    });
    let a = instance_on(&llm, &db, Arc::new(SystemClock), slow).await;
    let b = instance(&llm, &db).await;
    a.channel.dm(1, "run the echo").await;
    let card = a.channel.card().await;
    // Pressed in B only: B takes the paused turn and answers; A, which was
    // waiting for the decision, steps aside.
    b.channel.press(1, &card.action('y')).await;
    b.channel
        .wait_for("the answer from B", |l| {
            l.has_text("It printed handed-over.")
        })
        .await;
    let log = a
        .channel
        .wait_for("A posts what it said", |l| l.has_text("Let me run it."))
        .await;
    assert!(!log.any_contains("It printed"), "A does not answer as well");
    assert!(!log.any_contains("⏳"), "{:#?}", log.texts());
    a.stop().await;
    b.stop().await;
}

fn schedule(id: &str, due_ms: i64, missed: &str, prompt: &str) -> ScheduleRecord {
    let key = SessionKey {
        platform: Platform::Console,
        chat: ChatId(1),
        thread: None,
        user: UserId(1),
    };
    ScheduleRecord {
        id: id.parse().unwrap(),
        session_id: "sched-session".parse().unwrap(),
        origin: Conversation {
            key,
            chat: dm_chat(1),
            kind: ChatKind::Dm,
            user: user(1),
            reply_to: None,
        },
        kind: "at".into(),
        spec: chrono::DateTime::from_timestamp_millis(due_ms)
            .unwrap()
            .to_rfc3339(),
        timezone: "UTC".into(),
        prompt: prompt.into(),
        missed: missed.into(),
        next_run_at: Some(due_ms),
        last_fired_at: None,
        fired_count: 0,
        active: true,
    }
}

fn scheduled_requests(requests: &[serde_json::Value], prompt: &str) -> usize {
    requests
        .iter()
        .filter(|r| {
            r["messages"]
                .as_array()
                .unwrap()
                .last()
                .and_then(|m| m["content"].as_str())
                .is_some_and(|c| c.contains(prompt))
        })
        .count()
}

#[tokio::test]
async fn a_due_schedule_fires_exactly_once_across_two_instances() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_due_schedule_fires_exactly_once_across_two_instances_on(&db).await;
    }
}

async fn a_due_schedule_fires_exactly_once_across_two_instances_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.set_responder(|_| Reply::text("Reminder delivered."));
    let a = instance(&llm, &db).await;
    let b = instance(&llm, &db).await;
    let now = chrono::Utc::now().timestamp_millis();
    a.running
        .store
        .schedules()
        .insert(&schedule(
            "s-once",
            now + 1_500,
            "run_once",
            "water the plants",
        ))
        .await
        .unwrap();
    let answered = |l: &support::test_channel::Log| l.has_text("Reminder delivered.");
    tokio::select! {
        _ = a.channel.wait_for("the reminder in A", answered) => {}
        _ = b.channel.wait_for("the reminder in B", answered) => {}
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        scheduled_requests(&llm.requests().await, "water the plants"),
        1
    );
    let answers = a.channel.log().count_containing("Reminder delivered.")
        + b.channel.log().count_containing("Reminder delivered.");
    assert_eq!(answers, 1);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn concurrent_claimers_take_each_due_occurrence_once() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        concurrent_claimers_take_each_due_occurrence_once_on(&db).await;
    }
}

/// Four stores (four connection pools, as four processes would have) claim 500
/// due occurrences in small batches at once: every occurrence is claimed by
/// exactly one of them, and each schedule moved on exactly once.
async fn concurrent_claimers_take_each_due_occurrence_once_on(db: &Db) {
    const N: usize = 500;
    let first = Store::open(&db.url).await.unwrap();
    let now = chrono::Utc::now().timestamp_millis();
    for i in 0..N {
        let s = schedule(&format!("s-{i:03}"), now - 1_000, "run_once", "p");
        first.schedules().insert(&s).await.unwrap();
    }
    let mut claimers = Vec::new();
    for _ in 0..4 {
        let store = Store::open(&db.url).await.unwrap();
        claimers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let plan = |_: &ScheduleRecord| OccurrencePlan {
                    next: None,
                    run: true,
                    missed: false,
                };
                let batch = store.schedules().claim_due(now, 25, plan).await.unwrap();
                if batch.is_empty() {
                    return mine;
                }
                mine.extend(batch.into_iter().map(|c| c.schedule.id));
            }
        }));
    }
    let mut all = Vec::new();
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    assert_eq!(all.len(), N, "every occurrence claimed once");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), N, "no occurrence claimed twice");
    let left = first
        .schedules()
        .claim_due(now, 1_000, |_| unreachable!())
        .await
        .unwrap();
    assert!(left.is_empty());
    let s = first
        .schedules()
        .of_session(&"sched-session".parse().unwrap())
        .await
        .unwrap();
    assert!(s.is_empty(), "one-offs end once fired");
}

#[tokio::test]
async fn schedules_missed_during_downtime_follow_their_policy() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        schedules_missed_during_downtime_follow_their_policy_on(&db).await;
    }
}

async fn schedules_missed_during_downtime_follow_their_policy_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.set_responder(|_| Reply::text("Caught up."));
    let first = instance(&llm, &db).await;
    let ten_minutes_ago = chrono::Utc::now().timestamp_millis() - 600_000;
    first
        .running
        .store
        .schedules()
        .insert(&schedule(
            "s-run",
            ten_minutes_ago,
            "run_once",
            "missed but run",
        ))
        .await
        .unwrap();
    first
        .running
        .store
        .schedules()
        .insert(&schedule(
            "s-skip",
            ten_minutes_ago,
            "skip",
            "missed and skipped",
        ))
        .await
        .unwrap();
    first
        .channel
        .wait_for("the run_once schedule", |l| l.has_text("Caught up."))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let requests = llm.requests().await;
    assert_eq!(scheduled_requests(&requests, "missed but run"), 1);
    assert_eq!(scheduled_requests(&requests, "missed and skipped"), 0);
    let events = first.running.store.audit().recent(50).await.unwrap();
    assert!(events.iter().any(|e| e.kind == "schedule.skipped"));
    first.stop().await;
}

#[tokio::test]
async fn a_task_left_running_by_a_dead_process_is_reported_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_task_left_running_by_a_dead_process_is_reported_after_restart_on(&db).await;
    }
}

async fn a_task_left_running_by_a_dead_process_is_reported_after_restart_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    let first = instance(&llm, &db).await;
    first.running.idle().await;
    let task = TaskRecord {
        id: "0123456789abcdef0123456789abcdef".parse().unwrap(),
        session_id: "s".parse().unwrap(),
        tool_name: "exec_command".into(),
        arguments: "{}".into(),
        status: TaskStatus::Running,
        stage: String::new(),
        detail: String::new(),
        percent: None,
        result: None,
        chat: dm_chat(1),
        status_message: None,
        notify: switchboard::store::TaskNotify::Done,
        created_at: chrono::Utc::now(),
        finished_at: None,
    };
    let store = first.running.store.clone();
    first.stop().await;
    // A process that died while running it: its row names it, and its
    // liveness claim (a lock it held) ended with it.
    store.tasks().insert(&task).await.unwrap();
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    // A process that died: its id names no live liveness claim.
    let died = switchboard::domain::ProcessId::new();
    sqlx::query("UPDATE tasks SET owner = $1")
        .bind(died.as_str())
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let second = instance(&llm, &db).await;
    second
        .channel
        .wait_for("the interrupted notice", |l| {
            l.any_contains("`01234567` (exec_command) was interrupted")
        })
        .await;
    let stored = second
        .running
        .store
        .tasks()
        .get(&task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, TaskStatus::Interrupted);
    second.stop().await;
}

#[tokio::test]
async fn an_always_rule_skips_the_card_until_revoked() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        an_always_rule_skips_the_card_until_revoked_on(&db).await;
    }
}

async fn an_always_rule_skips_the_card_until_revoked_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    let i = instance(&llm, &db).await;
    llm.push(exec_call("c1", "echo ok"));
    llm.push(Reply::text("first"));
    i.channel.dm(1, "go").await;
    let card = i.channel.card().await;
    i.channel.press(1, &card.action('a')).await;
    i.channel
        .wait_for("first answer", |l| l.has_text("first"))
        .await;

    llm.push(exec_call("c2", "echo ok"));
    llm.push(Reply::text("second"));
    i.channel.dm(1, "again").await;
    let log = i
        .channel
        .wait_for("second answer", |l| l.has_text("second"))
        .await;
    assert_eq!(log.cards_ever(), 1, "the rule allowed it without a card");

    let rules = i
        .running
        .store
        .approvals()
        .rules(Platform::Console, UserId(1))
        .await
        .unwrap();
    i.channel
        .dm(1, &format!("/approvals revoke {}", rules[0].id.short()))
        .await;
    i.channel
        .wait_for("revoked", |l| l.any_contains("Revoked rule"))
        .await;
    let events = i.running.store.audit().recent(20).await.unwrap();
    assert!(
        events.iter().any(|e| e.kind == "approval.rule_revoked"),
        "the revocation is audited: {events:?}"
    );
    llm.push(exec_call("c3", "echo ok"));
    i.channel.dm(1, "once more").await;
    i.channel
        .wait_for("a new card", |l| l.cards_ever() == 2)
        .await;
    i.stop().await;
}

#[tokio::test]
async fn a_decision_nobody_resumed_is_picked_up_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_decision_nobody_resumed_is_picked_up_at_the_next_start_on(&db).await;
    }
}

async fn a_decision_nobody_resumed_is_picked_up_at_the_next_start_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(exec_call("call_1", "echo orphan-resumed"));
    let first = instance(&llm, &db).await;
    first.channel.dm(1, "run it").await;
    let card = first.channel.card().await;
    let store = first.running.store.clone();
    first.stop().await;
    // A press was recorded by a process that died before resuming the turn.
    let decided = store
        .approvals()
        .decide(
            &card.approval_id(),
            switchboard::store::ApprovalStatus::Allowed,
            Some(&user(1)),
            None,
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert!(decided.is_some());

    llm.push(Reply::text("Resumed at start-up."));
    let second = instance(&llm, &db).await;
    second
        .channel
        .wait_for("the resumed answer", |l| l.has_text("Resumed at start-up."))
        .await;
    let requests = llm.requests().await;
    assert!(last_tool_result(requests.last().unwrap()).contains("orphan-resumed"));
    second.stop().await;
}

#[tokio::test]
async fn a_task_running_in_one_instance_is_cancelled_from_another() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        a_task_running_in_one_instance_is_cancelled_from_another_on(&db).await;
    }
}

async fn a_task_running_in_one_instance_is_cancelled_from_another_on(db: &Db) {
    let llm = FakeLlm::start().await;
    let db = db.clone();
    llm.push(Reply::tool_calls([(
        "call_bg",
        "exec_command",
        json!({"command": "echo waiting; sleep 60", "background": true}),
    )]));
    llm.push(Reply::text("Started."));
    llm.push(Reply::text("The task was cancelled."));
    let a = instance(&llm, &db).await;
    let b = instance(&llm, &db).await;
    a.channel.dm(1, "start the slow job").await;
    let card = a.channel.card().await;
    a.channel.press(1, &card.action('y')).await;
    a.channel
        .wait_for("the first answer", |l| l.has_text("Started."))
        .await;
    let session = session(&a, 1).await;
    let task = a
        .running
        .store
        .tasks()
        .of_session(&session, 1)
        .await
        .unwrap()[0]
        .clone();
    assert_eq!(task.status, TaskStatus::Running);
    let short = task.id.short();

    // The same user, through the other process: it does not run the task, so it
    // records the request and the owner stops the task at its next pass.
    b.channel.dm(1, &format!("/tasks cancel {short}")).await;
    b.channel
        .wait_for("the relayed cancel", |l| {
            l.any_contains(&format!("Task `{short}` runs in another gateway process"))
        })
        .await;
    a.channel
        .wait_for("the notification answer in the originating process", |l| {
            l.has_text("The task was cancelled.")
        })
        .await;
    let stored = a
        .running
        .store
        .tasks()
        .get(&task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, TaskStatus::Cancelled);
    assert_eq!(stored.result.as_deref(), Some("cancelled"));

    // A finished task cannot be asked again.
    b.channel.dm(1, &format!("/tasks cancel {short}")).await;
    b.channel
        .wait_for("the not-running reply", |l| {
            l.any_contains(&format!("Task `{short}` is not running (cancelled)"))
        })
        .await;
    a.stop().await;
    b.stop().await;
}

/// Issue 23 item 8: the per-user caps on background tasks and schedules are
/// counted in the database, so two gateway processes (two pools) inserting at
/// once for the same user across four chats admit exactly the cap.
#[tokio::test]
async fn per_user_caps_hold_across_two_processes_on_one_database() {
    use switchboard::store::Admission;
    let tomorrow = chrono::Utc::now().timestamp_millis() + 86_400_000;
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path()).await {
        let stores = [
            Store::open(&db.url).await.unwrap(),
            Store::open(&db.url).await.unwrap(),
        ];
        let mut sessions = Vec::new();
        for chat in 1..=4 {
            let key = SessionKey {
                platform: Platform::Console,
                chat: ChatId(chat),
                thread: Some(switchboard_platform::ThreadId(chat * 10)),
                user: UserId(7),
            };
            sessions.push(stores[0].sessions().open(&key).await.unwrap());
        }
        let attempts = (0..40).map(|i| {
            let store = stores[i % 2].clone();
            let session = sessions[i % 4].clone();
            async move {
                let task = TaskRecord {
                    id: format!("{i:032x}").parse().unwrap(),
                    session_id: session.clone(),
                    tool_name: "delegate_to_research".into(),
                    arguments: "{}".into(),
                    status: TaskStatus::Running,
                    stage: String::new(),
                    detail: String::new(),
                    percent: None,
                    result: None,
                    chat: dm_chat(7),
                    status_message: None,
                    notify: switchboard::store::TaskNotify::Done,
                    created_at: chrono::Utc::now(),
                    finished_at: None,
                };
                let mut plan = schedule(&format!("s{i}"), tomorrow, "run_once", "p");
                plan.session_id = session;
                let t = store
                    .tasks()
                    .insert_within_cap(
                        &task,
                        &switchboard::domain::ProcessId::new(),
                        Platform::Console,
                        UserId(7),
                        5,
                    )
                    .await
                    .unwrap();
                let s = store
                    .schedules()
                    .insert_within_cap(&plan, Platform::Console, UserId(7), 3)
                    .await
                    .unwrap();
                (t, s)
            }
        });
        let outcomes = futures::future::join_all(attempts).await;
        let tasks = outcomes
            .iter()
            .filter(|(t, _)| *t == Admission::Admitted)
            .count();
        let schedules = outcomes
            .iter()
            .filter(|(_, s)| *s == Admission::Admitted)
            .count();
        assert_eq!((tasks, schedules), (5, 3), "{}", db.url);
        let mut stored = 0;
        for session in &sessions {
            stored += stores[1]
                .tasks()
                .of_session(session, 100)
                .await
                .unwrap()
                .len();
        }
        assert_eq!(stored, 5);
        // Another user of the same chats is not affected.
        let other = stores[1]
            .schedules()
            .insert_within_cap(
                &schedule("other", tomorrow, "run_once", "p"),
                Platform::Console,
                UserId(8),
                3,
            )
            .await
            .unwrap();
        assert_eq!(other, Admission::Admitted);
    }
}
