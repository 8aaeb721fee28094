//! Activity lines end to end: a tool round's line in the draft (⏳, then ✓
//! with its time) collapsing to one line above the answer; secrets masked in
//! the argument summary; `/verbose` switching per session; a compaction note;
//! and no more platform calls per answer than without activity lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::e2e::{messages, Harness};
use support::fake_llm::Reply;
use support::test_channel::{Log, Op, TestChannel};
use switchboard::llm::{Message, ToolCall};
use switchboard_platform::{Capabilities, LengthUnit};

const TOOLS: &[(&str, &str)] = &[("CHAT_VERBOSITY", "tools")];

/// Every text the bot ever showed (sends and edits, in order).
fn shown(log: &Log) -> Vec<String> {
    log.ops
        .iter()
        .filter_map(|op| match op {
            Op::Send { text, .. } | Op::Edit { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn read_round(h: &Harness, answer: &str) {
    h.llm.push(Reply::tool_calls([(
        "call_1",
        "read_file",
        json!({"path": "notes/todo.txt"}),
    )]));
    h.llm.push(Reply::text(answer));
}

fn collapsed_above(text: &str, answer: &str) -> bool {
    text.starts_with("_🔧 1 tool · ") && text.ends_with(&format!(" s_\n\n{answer}"))
}

#[tokio::test]
async fn a_tool_round_shows_its_line_then_collapses_above_the_answer() {
    let h = Harness::with(TOOLS).await;
    h.write("notes/todo.txt", "buy milk\n");
    read_round(&h, "You need milk.");
    h.channel.dm(1, "what's on my list?").await;
    h.wait_for("the collapsed answer", |l| {
        l.texts()
            .iter()
            .any(|t| collapsed_above(t, "You need milk."))
    })
    .await;
    h.idle().await;

    let log = h.channel.log();
    assert_eq!(
        log.sent().len(),
        1,
        "one message: the draft became the answer\n{log}"
    );
    let shown = shown(&log);
    assert!(
        shown.iter().any(|t| t == "⏳ Read file · `notes/todo.txt`"),
        "the running line\n{log}"
    );
    assert!(
        shown
            .iter()
            .any(|t| t.starts_with("✓ Read file · `notes/todo.txt` · ") && t.ends_with(" s")),
        "the finished line with its time\n{log}"
    );
    let text = &log.sent()[0].text;
    assert!(
        !text.contains('⏳') && !text.contains("✓ Read file"),
        "{text}"
    );
    h.stop().await;
}

#[tokio::test]
async fn secrets_in_arguments_are_masked() {
    const KEY: &str = "sk-activity-0123456789abcdef";
    let h = Harness::with(&[("CHAT_VERBOSITY", "tools"), ("LLM_API_KEY", KEY)]).await;
    h.llm.push(Reply::tool_calls([(
        "call_1",
        "web_fetch",
        json!({"url": format!("https://example.invalid/?q={KEY}"), "api_token": "tok-plain-4242"}),
    )]));
    h.llm.push(Reply::text("Fetched."));
    h.channel.dm(1, "fetch it").await;
    h.wait_for("the answer", |l| l.any_contains("Fetched."))
        .await;
    h.idle().await;

    let log = h.channel.log();
    let shown = shown(&log);
    assert!(
        shown.iter().any(|t| t.contains("Fetch web page · `")),
        "the call's line\n{log}"
    );
    for text in &shown {
        assert!(!text.contains(KEY), "the known key is scrubbed: {text}");
        assert!(
            !text.contains("tok-plain-4242"),
            "a token argument is masked: {text}"
        );
    }
    assert!(
        shown.iter().any(|t| t.contains("api_token: •••")),
        "the masked argument is named\n{log}"
    );
    h.stop().await;
}

#[tokio::test]
async fn verbose_switches_per_session_and_is_stored() {
    let h = Harness::with(TOOLS).await;
    h.write("notes/todo.txt", "buy milk\n");
    h.write_for(2, "notes/todo.txt", "buy milk\n");

    h.channel.dm(1, "/verbose loud").await;
    h.wait_for("the usage", |l| l.any_contains("Unknown verbosity `loud`"))
        .await;
    h.channel.dm(1, "/verbose off").await;
    h.wait_for("off", |l| l.any_contains("Verbosity: **off**"))
        .await;
    read_round(&h, "Plain answer.");
    h.channel.dm(1, "list?").await;
    h.wait_for("the plain answer", |l| l.has_text("Plain answer."))
        .await;
    h.idle().await;
    let log = h.channel.log();
    assert!(
        shown(&log)
            .iter()
            .all(|t| !t.contains("Read file") && !t.contains('🔧')),
        "off: today's behaviour, no activity\n{log}"
    );

    // Another session keeps the operator's default.
    read_round(&h, "Your answer.");
    h.channel.dm(2, "list?").await;
    h.wait_for("user 2's collapsed answer", |l| {
        l.texts().iter().any(|t| collapsed_above(t, "Your answer."))
    })
    .await;
    h.idle().await;

    h.channel.dm(1, "/verbose FULL").await;
    h.wait_for("full", |l| l.any_contains("Verbosity: **full**"))
        .await;
    h.llm.push(Reply::reasoning_then_tool_calls(
        "The user wants the list, so I should read the todo file first.",
        [("call_2", "read_file", json!({"path": "notes/todo.txt"}))],
    ));
    h.llm.push(Reply::text("Milk, again."));
    h.channel.dm(1, "list again?").await;
    h.wait_for("the full answer", |l| l.any_contains("Milk, again."))
        .await;
    h.idle().await;
    let log = h.channel.log();
    let answer = log.find("Milk, again.").unwrap().text.clone();
    assert!(
        answer
            .starts_with("> 💭 _The user wants the list, so I should read the todo file first._\n"),
        "{answer}"
    );
    assert!(answer.contains("\n_🔧 1 tool · "), "{answer}");
    assert!(answer.ends_with("\n\nMilk, again."), "{answer}");

    let session = h.session(1, 1).await;
    assert_eq!(
        h.running
            .store
            .verbosity(&session)
            .await
            .unwrap()
            .as_deref(),
        Some("full")
    );
    let other = h.session(2, 2).await;
    assert_eq!(h.running.store.verbosity(&other).await.unwrap(), None);
    h.channel.dm(1, "/verbose").await;
    h.wait_for("the current setting", |l| {
        l.any_contains("Verbosity here: **full**")
    })
    .await;
    h.stop().await;
}

fn is_summarize(request: &Value) -> bool {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .starts_with("You compress the earlier part")
}

#[tokio::test]
async fn a_compaction_is_noted_above_the_answer() {
    let h = Harness::with(&[("CHAT_VERBOSITY", "tools"), ("LLM_CONTEXT_WINDOW", "20000")]).await;
    let session = h.session(1, 1).await;
    let mut history = Vec::new();
    for i in 0..24 {
        history.push(Message::user(format!(
            "Question {i}: {}",
            "please look at the report data ".repeat(12)
        )));
        let mut call = Message::assistant("");
        call.tool_calls.push(ToolCall {
            id: format!("call_{i}"),
            name: "read_file".into(),
            arguments: json!({"path": format!("r{i}.json")}).to_string(),
        });
        history.push(call);
        let result = json!({"rows": vec!["x".repeat(40); 30], "debug": "y".repeat(200)});
        history.push(Message::tool_result(
            format!("call_{i}"),
            result.to_string(),
        ));
        history.push(Message::assistant(format!(
            "Answer {i}: {}",
            "the numbers look fine ".repeat(10)
        )));
    }
    h.running
        .store
        .history()
        .append(&session, &history)
        .await
        .unwrap();
    h.llm.set_responder(|request| {
        if is_summarize(request) {
            Reply::text(&json!({"summary": "Reports reviewed.", "task_state": {}}).to_string())
        } else {
            Reply::text("Continuing.")
        }
    });
    h.channel.dm(1, "What is the next step?").await;
    h.wait_for("the answer", |l| l.any_contains("Continuing."))
        .await;
    h.idle().await;
    let log = h.channel.log();
    let answer = log.find("Continuing.").unwrap().text.clone();
    let (head, rest) = answer.split_once("\n\n").unwrap();
    assert_eq!(rest, "Continuing.");
    assert!(
        head.starts_with("_🗜 context compacted: ") && head.ends_with("K tokens_"),
        "{answer}"
    );
    let numbers: Vec<&str> = head
        .trim_start_matches("_🗜 context compacted: ")
        .trim_end_matches(" tokens_")
        .split(" → ")
        .collect();
    let k = |s: &str| s.trim_end_matches('K').parse::<u32>().unwrap();
    assert!(k(numbers[0]) > k(numbers[1]), "{head}");
    h.stop().await;
}

/// A channel whose edit interval no test outlives: only what the throttle
/// lets through reaches it.
fn throttled() -> std::sync::Arc<TestChannel> {
    TestChannel::with_capabilities(Capabilities {
        max_message_len: 4096,
        length_unit: LengthUnit::Chars,
        can_edit: true,
        buttons: true,
        threads: false,
        min_edit_interval: Duration::from_secs(3600),
        private_answers: true,
        max_upload_bytes: 50 << 20,
        max_download_bytes: 20 << 20,
        answer_buttons: true,
        local_operator: false,
        forms: false,
        menus: false,
    })
}

/// Sends and edits since operation `from`.
fn calls_since(log: &Log, from: usize) -> (usize, usize) {
    let ops = &log.ops[from..];
    let sends = ops.iter().filter(|o| matches!(o, Op::Send { .. })).count();
    let edits = ops.iter().filter(|o| matches!(o, Op::Edit { .. })).count();
    (sends, edits)
}

#[tokio::test]
async fn activity_lines_add_no_platform_calls_within_the_throttle() {
    let h = Harness::with_channel(TOOLS, throttled()).await;
    h.write("notes/todo.txt", "buy milk\n");

    h.channel.dm(1, "/verbose off").await;
    h.wait_for("off", |l| l.any_contains("Verbosity: **off**"))
        .await;
    h.idle().await;
    let before_off = h.channel.log().ops.len();
    read_round(&h, "Milk.");
    h.channel.dm(1, "list?").await;
    h.wait_for("the answer", |l| l.has_text("Milk.")).await;
    h.idle().await;
    let off = calls_since(&h.channel.log(), before_off);

    h.channel.dm(1, "/verbose tools").await;
    h.wait_for("tools", |l| l.any_contains("Verbosity: **tools**"))
        .await;
    h.idle().await;
    let before_tools = h.channel.log().ops.len();
    read_round(&h, "Milk again.");
    h.channel.dm(1, "list?").await;
    h.wait_for("the collapsed answer", |l| {
        l.texts().iter().any(|t| collapsed_above(t, "Milk again."))
    })
    .await;
    h.idle().await;
    let tools = calls_since(&h.channel.log(), before_tools);

    eprintln!("calls per answer (sends, edits): off {off:?}, tools {tools:?}");
    assert_eq!(off, (1, 0), "{}", h.channel.log());
    assert_eq!(
        tools,
        off,
        "activity lines cost no call\n{}",
        h.channel.log()
    );
    h.stop().await;
}

#[tokio::test]
async fn verbosity_is_stored_on_postgres_too() {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL not set: skipped");
        return;
    };
    let url = support::postgres::fresh_postgres(&admin).await;
    let store = switchboard::store::Store::open(&url).await.unwrap();
    let key = switchboard::store::SessionKey {
        platform: switchboard_platform::Platform::Telegram,
        chat: switchboard_platform::ChatId(-100),
        thread: Some(switchboard_platform::ThreadId(7)),
        user: switchboard_platform::UserId(1),
    };
    let session = store.sessions().open(&key).await.unwrap();
    assert_eq!(store.verbosity(&session).await.unwrap(), None);
    store.set_verbosity(&session, Some("full")).await.unwrap();
    store.set_verbosity(&session, Some("off")).await.unwrap();
    assert_eq!(
        store.verbosity(&session).await.unwrap().as_deref(),
        Some("off")
    );
}

#[tokio::test]
async fn a_sub_agents_steps_nest_under_its_delegate_line() {
    let h = Harness::with(TOOLS).await;
    h.write("notes/todo.txt", "buy milk\n");
    h.llm.push(Reply::tool_calls([(
        "call_1",
        "delegate_to_research",
        json!({"task": "read notes/todo.txt"}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "sub_1",
        "read_file",
        json!({"path": "notes/todo.txt"}),
    )]));
    h.llm.push(Reply::text("The notes say buy milk."));
    h.llm.push(Reply::text("Buy milk, says the researcher."));
    h.channel.dm(1, "ask the researcher").await;
    h.wait_for("the collapsed answer", |l| {
        l.texts()
            .iter()
            .any(|t| collapsed_above(t, "Buy milk, says the researcher."))
    })
    .await;
    h.idle().await;

    let log = h.channel.log();
    // The step (with its ✓ and time once done) under its delegate line.
    let nested = "⏳ Ask the research sub-agent · `read notes/todo.txt`\n↳ _research sub-agent — step 1: read\\_file";
    assert!(
        shown(&log)
            .iter()
            .any(|t| t.starts_with(nested) && t.ends_with('_')),
        "the step under its delegate line\n{log}"
    );
    assert!(
        shown(&log).iter().all(|t| !t.contains("⏳ research")),
        "no separate status line at `tools`\n{log}"
    );
    assert_eq!(log.sent().len(), 1, "{log}");
    h.stop().await;
}

#[tokio::test]
async fn a_sub_agents_words_stream_under_its_delegate_line() {
    let h = Harness::with(TOOLS).await;
    h.llm.push(Reply::tool_calls([(
        "call_1",
        "delegate_to_research",
        json!({"task": "summarize the plan"}),
    )]));
    // The sub-agent writes, then its model goes quiet mid-answer.
    h.llm
        .push(Reply::text("The plan has three steps and a deadline").then_stall());
    h.channel.dm(1, "ask the researcher").await;
    let log = h
        .wait_for("the sub-agent's words", |l| {
            shown(l).iter().any(|t| {
                t.contains(
                    "↳ _research sub-agent — writes: The plan has three steps and a deadline_",
                )
            })
        })
        .await;
    let draft = shown(&log)
        .into_iter()
        .rev()
        .find(|t| t.contains("writes:"))
        .unwrap();
    assert!(
        draft.starts_with("⏳ Ask the research sub-agent · `summarize the plan`\n↳ _research"),
        "{draft}"
    );
    assert_eq!(log.sent().len(), 1, "edits of one draft: {log}");
    h.channel.dm(1, "/stop").await;
    h.idle().await;
    h.stop().await;
}

#[tokio::test]
async fn a_fallback_model_serving_is_named_above_the_answer() {
    let backup = support::fake_llm::FakeLlm::start().await;
    backup.set_responder(|_| Reply::text("From the backup."));
    let h = Harness::with(&[
        ("CHAT_VERBOSITY", "tools"),
        ("LLM_FALLBACK_1_BASE_URL", &backup.base_url()),
        ("LLM_FALLBACK_1_MODEL", "backup-model"),
    ])
    .await;
    let overloaded = support::fake_llm::error_body("overloaded", "server_error", None);
    h.llm.push(Reply::status(503, overloaded));
    h.channel.dm(1, "hello").await;
    h.wait_for("the backup's answer", |l| {
        l.any_contains("From the backup.")
    })
    .await;
    h.idle().await;
    let log = h.channel.log();
    assert_eq!(
        log.find("From the backup.").unwrap().text,
        "_↪ fallback model `backup-model`_\n\nFrom the backup.",
        "{log}"
    );
    // The primary cools down: the next turn is the backup's too, and says so.
    h.channel.dm(1, "again").await;
    h.wait_for("the second answer", |l| {
        l.count_containing("From the backup.") == 2
    })
    .await;
    h.stop().await;
}
