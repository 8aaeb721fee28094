//! End to end through `switchboard::start`: the real gateway, agent and tools
//! against the fake LLM and the in-memory test channel — streamed answers, tool
//! rounds, the doom-loop guard, stalls, queueing, slash commands and traces.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::e2e::{files_under, messages, tool_result, tool_results, Harness};
use support::fake_llm::{last_user_text, Reply};
use support::test_channel::{Op, TestChannel};
use switchboard_platform::{measure, Activity, Addressed, Capabilities, ChatId, LengthUnit};

fn contents(request: &Value) -> Vec<(String, String)> {
    messages(request)
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_plain_answer_streams_into_one_message_and_is_remembered() {
    let h = Harness::start().await;
    let answer = "Hello there! Streaming works, word by word.";
    h.llm
        .push(Reply::text(answer).with_chunk_delay(Duration::from_millis(15)));
    let asked = h.channel.dm(1, "hi").await;
    h.wait_for("the final answer", |l| l.has_text(answer)).await;
    h.idle().await;

    let log = h.channel.log();
    let sent = log.sent();
    assert_eq!(sent.len(), 1, "one message, edited in place\n{log}");
    let shown = log.history_of(sent[0].id);
    assert!(
        shown.len() >= 3,
        "the draft grew while streaming: {shown:?}"
    );
    assert!(
        shown[0].len() < answer.len(),
        "first draft is partial: {shown:?}"
    );
    for pair in shown.windows(2) {
        assert!(
            pair[1].starts_with(pair[0].trim_end()),
            "drafts only grow: {shown:?}"
        );
    }
    assert_eq!(shown.last().map(String::as_str), Some(answer));
    assert!(
        log.ops
            .iter()
            .any(|op| matches!(op, Op::Send { reply_to, .. } if *reply_to == Some(asked))),
        "the answer replies to the question\n{log}"
    );
    let activities: Vec<Activity> = log
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Activity { activity, .. } => Some(*activity),
            _ => None,
        })
        .collect();
    assert_eq!(activities.first(), Some(&Activity::Typing));
    assert_eq!(activities.last(), Some(&Activity::Idle));

    let session = h.session(1, 1).await;
    let history = h
        .running
        .store
        .history()
        .recent(&session, 10)
        .await
        .unwrap();
    let stored: Vec<(String, String)> = history
        .iter()
        .map(|m| (format!("{:?}", m.role), m.content.clone()))
        .collect();
    assert_eq!(
        stored,
        [
            ("User".into(), "hi".into()),
            ("Assistant".into(), answer.into())
        ]
    );

    h.llm.push(Reply::text("Again."));
    h.channel.dm(1, "and again").await;
    h.wait_for("the second answer", |l| l.has_text("Again."))
        .await;
    let requests = h.requests(2).await;
    let second = contents(&requests[1]);
    assert_eq!(second[0].0, "system");
    assert_eq!(
        second[1..],
        [
            ("user".into(), "hi".into()),
            ("assistant".into(), answer.into()),
            ("user".into(), "and again".into())
        ]
    );
    h.stop().await;
}

#[tokio::test]
async fn a_tool_round_feeds_the_file_back_to_the_model() {
    let h = Harness::start().await;
    h.write("notes/todo.txt", "buy milk\nwalk the dog\n");
    h.llm.push(Reply::text_then_tool_calls(
        "Let me look.",
        [("call_1", "read_file", json!({"path": "notes/todo.txt"}))],
    ));
    h.llm
        .push(Reply::text("You need to buy milk and walk the dog."));
    h.channel.dm(1, "what's on my list?").await;
    let final_text = "Let me look.\n\nYou need to buy milk and walk the dog.";
    h.wait_for("the answer after the tool round", |l| {
        l.has_text(final_text)
    })
    .await;
    h.idle().await;

    let requests = h.requests(2).await;
    assert_eq!(requests.len(), 2);
    let second = messages(&requests[1]);
    let call = second
        .iter()
        .find(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .expect("the assistant's tool call is replayed");
    assert_eq!(call["tool_calls"][0]["id"], "call_1");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "read_file");
    let result = tool_result(&requests[1], "call_1");
    assert!(
        result.contains("     1\tbuy milk") && result.contains("     2\twalk the dog"),
        "{result}"
    );
    assert_eq!(h.channel.log().sent().len(), 1, "one answer message");

    // The next turn replays the tool round from history, still well-formed.
    h.llm.push(Reply::text("Anything else?"));
    h.channel.dm(1, "thanks").await;
    h.wait_for("the next answer", |l| l.has_text("Anything else?"))
        .await;
    let requests = h.requests(3).await;
    let roles: Vec<String> = contents(&requests[2]).into_iter().map(|(r, _)| r).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert!(tool_result(&requests[2], "call_1").contains("buy milk"));
    h.stop().await;
}

#[tokio::test]
async fn parallel_safe_tools_return_every_result_in_call_order() {
    let h = Harness::start().await;
    h.write("a.txt", "alpha");
    h.write("b.txt", "beta");
    h.llm.push(Reply::tool_calls([
        ("call_a", "read_file", json!({"path": "a.txt"})),
        ("call_b", "read_file", json!({"path": "b.txt"})),
    ]));
    h.llm.push(Reply::text("alpha and beta"));
    h.channel.dm(1, "read both").await;
    h.wait_for("the answer", |l| l.has_text("alpha and beta"))
        .await;

    let requests = h.requests(2).await;
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "call_a");
    assert!(results[0].1.contains("alpha"), "{results:?}");
    assert_eq!(results[1].0, "call_b");
    assert!(results[1].1.contains("beta"), "{results:?}");
    h.stop().await;
}

#[tokio::test]
async fn a_doom_loop_is_cut_off_on_the_third_identical_call() {
    let h = Harness::start().await;
    h.write("a.txt", "alpha");
    for i in 1..=3 {
        h.llm.push(Reply::tool_calls([(
            format!("call_{i}"),
            "read_file",
            json!({"path": "a.txt"}),
        )]));
    }
    h.llm
        .push(Reply::text("I was going in circles; the file says alpha."));
    h.channel.dm(1, "read a.txt until it changes").await;
    h.wait_for("the answer", |l| l.any_contains("going in circles"))
        .await;

    let requests = h.requests(4).await;
    assert!(tool_result(&requests[1], "call_1").contains("alpha"));
    assert!(tool_result(&requests[2], "call_2").contains("alpha"));
    let third = tool_result(&requests[3], "call_3");
    assert!(third.starts_with("error: loop detected"), "{third}");
    assert!(
        !third.contains("alpha"),
        "the third call did not run: {third}"
    );
    h.idle().await;
    // The trace records the correction as a retry.
    let retries: Vec<Value> = files_under(&h.data_dir().join("scratchpad"))
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .filter(|v| v["type"] == "retry")
        .collect();
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!(retries[0]["reason"], "loop_guard");
    assert_eq!(retries[0]["tool"], "read_file");
    h.stop().await;
}

#[tokio::test]
async fn a_stalled_model_times_out_with_a_message_and_the_session_recovers() {
    let h = Harness::with(&[("LLM_IDLE_TIMEOUT_SECS", "1")]).await;
    h.llm.push(Reply::text("Let me think about").then_stall());
    h.channel.dm(1, "a hard question").await;
    let log = h
        .wait_for("the timeout notice", |l| {
            l.any_contains("stopped responding")
        })
        .await;
    let notice = log.find("stopped responding").unwrap();
    assert!(notice.text.starts_with("⚠️"), "{}", notice.text);
    h.idle().await;

    h.llm.push(Reply::text("Here is a normal answer."));
    h.channel.dm(1, "try again").await;
    h.wait_for("a normal answer", |l| {
        l.has_text("Here is a normal answer.")
    })
    .await;
    let requests = h.requests(2).await;
    assert_eq!(last_user_text(&requests[1]).as_deref(), Some("try again"));
    h.stop().await;
}

#[tokio::test]
async fn messages_sent_mid_turn_are_queued_and_answered_in_order() {
    let h = Harness::start().await;
    h.llm.set_responder(|request| {
        let asked = last_user_text(request).unwrap_or_default();
        Reply::text(&format!("echo: {asked}")).with_chunk_delay(Duration::from_millis(60))
    });
    h.channel.dm(1, "one").await;
    h.wait_for("the first answer to start streaming", |l| {
        l.any_contains("echo:")
    })
    .await;
    h.channel.dm(1, "two").await;
    h.channel.dm(1, "three").await;
    h.wait_for("three answers", |l| l.has_text("echo: three"))
        .await;
    h.idle().await;

    let log = h.channel.log();
    assert_eq!(
        log.texts_in(1),
        ["echo: one", "echo: two", "echo: three"],
        "\n{log}"
    );
    let asked: Vec<String> = h
        .llm
        .requests()
        .await
        .iter()
        .filter_map(last_user_text)
        .collect();
    assert_eq!(asked, ["one", "two", "three"]);
    h.stop().await;
}

#[tokio::test]
async fn slash_commands_are_answered_without_the_model() {
    let h = Harness::start().await;
    h.llm
        .push(Reply::text("First answer.").with_usage(120, 7, 100));
    h.channel.dm(1, "hello").await;
    h.wait_for("the first answer", |l| l.has_text("First answer."))
        .await;
    h.idle().await;

    let replies = [
        ("/usage", "`fake-model`: 1 turns"),
        (
            "/whoami",
            "You are user1 (user id 1) on console. Chat 1. Approver: no.",
        ),
        ("/clear", "Cleared this conversation (2 messages)"),
        ("/help", "**Commands**"),
    ];
    for (command, expected) in replies {
        h.channel.dm(1, command).await;
        h.wait_for(command, |l| l.any_contains(expected)).await;
    }
    let log = h.channel.log();
    let usage = log.find("**Today**").unwrap();
    assert!(
        usage.text.contains("120 in / 7 out tokens") && usage.text.contains("cache hits 83 %"),
        "{}",
        usage.text
    );
    assert!(log.find("**Commands**").unwrap().text.contains("/approve"));
    assert_eq!(
        h.llm.requests().await.len(),
        1,
        "commands never reach the model"
    );

    h.llm.push(Reply::text("Fresh start."));
    h.channel.dm(1, "hello again").await;
    h.wait_for("an answer after /clear", |l| l.has_text("Fresh start."))
        .await;
    let requests = h.requests(2).await;
    let after_clear = contents(&requests[1]);
    assert_eq!(
        after_clear.len(),
        2,
        "system + the new message: {after_clear:?}"
    );
    assert_eq!(after_clear[1], ("user".into(), "hello again".into()));
    h.stop().await;
}

#[tokio::test]
async fn the_scratchpad_traces_the_turn_and_no_file_holds_the_api_key() {
    let secret = "sk-e2e-SECRET-7f3a9c1d5e";
    let h = Harness::with(&[("LLM_API_KEY", secret)]).await;
    h.llm.require_api_key(secret);
    h.write("a.txt", "alpha");
    h.llm.push(Reply::tool_calls([(
        "call_1",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    h.llm.push(Reply::text("It says alpha."));
    h.channel.dm(1, "read a.txt").await;
    h.wait_for("the answer", |l| l.has_text("It says alpha."))
        .await;
    h.idle().await;
    let expected = format!("Bearer {secret}");
    assert!(
        h.llm
            .authorizations()
            .iter()
            .all(|a| a.as_deref() == Some(expected.as_str())),
        "the key was really used"
    );

    let data_dir = h.data_dir();
    let session = h.session(1, 1).await;
    let traces: Vec<_> = files_under(&data_dir.join("scratchpad"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(traces.len(), 1, "one trace per turn: {traces:?}");
    assert!(
        traces[0].parent().unwrap().ends_with(session.as_str()),
        "{traces:?} under the session {session}"
    );
    let text = std::fs::read_to_string(&traces[0]).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("every line is JSON");
            v["type"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(kinds, ["init", "tool_result", "final"], "{text}");
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    for count in ["input_tokens", "output_tokens"] {
        assert!(
            last[count].is_u64(),
            "the final record keeps {count}: {last}"
        );
    }

    let _dir = h.stop().await;
    let files = files_under(&data_dir);
    assert!(
        files.iter().any(|p| p.ends_with("switchboard.db")),
        "{files:?}"
    );
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{} contains the API key",
            file.display()
        );
    }
}

#[tokio::test]
async fn group_chatter_is_ignored_and_each_member_has_a_session() {
    let h = Harness::start().await;
    h.llm.push(Reply::text("You called?"));
    h.llm.push(Reply::text("Hi user2."));
    h.channel
        .group(1, -100, Addressed::NotAddressed, "lunch?")
        .await;
    h.channel
        .group(1, -100, Addressed::Mention, "bot, hello")
        .await;
    h.wait_for("the answer", |l| l.has_text("You called?"))
        .await;
    h.idle().await;
    h.channel
        .group(2, -100, Addressed::ReplyToBot, "and me?")
        .await;
    h.wait_for("user 2's answer", |l| l.has_text("Hi user2."))
        .await;

    let requests = h.requests(2).await;
    let first = contents(&requests[0]);
    assert_eq!(
        first[1..],
        [("user".into(), "bot, hello".into())],
        "chatter never reaches the model"
    );
    let second = contents(&requests[1]);
    assert_eq!(
        second[1..],
        [("user".into(), "and me?".into())],
        "user 2 does not see user 1's session"
    );
    let log = h.channel.log();
    assert!(log.sent().iter().all(|m| m.chat.chat == ChatId(-100)));
    h.stop().await;
}

#[tokio::test]
async fn long_answers_are_split_to_the_platform_limit_in_its_unit() {
    let channel = TestChannel::with_capabilities(Capabilities {
        max_message_len: 120,
        length_unit: LengthUnit::Utf16,
        can_edit: true,
        buttons: true,
        threads: false,
        min_edit_interval: Duration::from_millis(30),
        private_answers: true,
        max_upload_bytes: 50 << 20,
        max_download_bytes: 20 << 20,
        answer_buttons: true,
        local_operator: false,
        forms: false,
        menus: false,
    });
    let h = Harness::with_channel(&[], channel).await;
    // 90 chars but 150 UTF-16 units per paragraph: only the platform's unit
    // shows that each paragraph must be cut too.
    let paragraph = |c: &str| format!("{} {}", "😀".repeat(60), c.repeat(29));
    let answer = [paragraph("a"), paragraph("b"), paragraph("c")].join("\n\n");
    h.llm
        .push(Reply::text(&answer).with_chunk_delay(Duration::from_millis(5)));
    let asked = h.channel.dm(1, "say a lot").await;
    h.wait_for("the whole answer", |l| l.any_contains(&"c".repeat(29)))
        .await;
    h.idle().await;

    let log = h.channel.log();
    let parts = log.texts_in(1);
    assert!(parts.len() >= 3, "{parts:?}");
    for part in &parts {
        assert!(measure(part, LengthUnit::Utf16) <= 120, "{part:?}");
    }
    let squash = |t: &str| t.split_whitespace().collect::<String>();
    assert_eq!(
        squash(&parts.concat()),
        squash(&answer),
        "nothing lost or doubled"
    );
    let first = log.sent()[0].id;
    assert!(log.ops.iter().any(
        |op| matches!(op, Op::Send { id, reply_to, .. } if *id == first && *reply_to == Some(asked))
    ));
    h.stop().await;
}

#[tokio::test]
async fn different_users_are_answered_in_parallel() {
    let h = Harness::start().await;
    h.llm
        .set_responder(|request| match last_user_text(request).as_deref() {
            Some("slow") => {
                Reply::text("slow answer done").with_chunk_delay(Duration::from_millis(500))
            }
            _ => Reply::text("fast answer"),
        });
    h.channel.dm(1, "slow").await;
    h.wait_for("the slow answer to start", |l| l.any_contains("slow"))
        .await;
    h.channel.dm(2, "quick").await;
    let log = h
        .wait_for("the fast answer", |l| l.has_text("fast answer"))
        .await;
    assert!(
        !log.has_text("slow answer done"),
        "user 2 did not wait for user 1's turn\n{log}"
    );
    h.wait_for("the slow answer", |l| l.has_text("slow answer done"))
        .await;
    h.stop().await;
}

#[tokio::test]
async fn ask_user_posts_the_question_and_the_next_message_answers_it() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_q",
        "ask_user",
        json!({"question": "Which environment?"}),
    )]));
    h.llm.push(Reply::text("Deploying to staging."));
    h.channel.dm(1, "deploy it").await;
    h.wait_for("the question", |l| l.has_text("Which environment?"))
        .await;
    h.idle().await;
    h.channel.dm(1, "staging").await;
    h.wait_for("the answer", |l| l.has_text("Deploying to staging."))
        .await;
    let requests = h.requests(2).await;
    assert_eq!(requests.len(), 2, "the question ended the first turn");
    let answer = last_user_text(&requests[1]).unwrap();
    assert!(
        answer.contains("Which environment?") && answer.ends_with("staging"),
        "{answer}"
    );
    h.stop().await;
}

#[tokio::test]
async fn skills_added_or_removed_while_running_are_picked_up() {
    let skills = tempfile::tempdir().unwrap();
    let dir = skills.path().display().to_string();
    let h = Harness::with(&[("SKILLS_DIR", dir.as_str())]).await;
    let file = skills.path().join("haiku.md");
    std::fs::write(
        &file,
        "---\ndescription: A haiku about it\n---\nWrite a haiku about {{args}}",
    )
    .unwrap();
    // The directory is looked at every second: ask until the listing has it.
    listing_until(&h, |l| l.contains("/haiku: A haiku about it")).await;

    h.llm.push(Reply::text("Old pond, a frog jumps."));
    h.channel.dm(1, "/haiku frogs").await;
    h.wait_for("the haiku", |l| l.has_text("Old pond, a frog jumps."))
        .await;
    let request = &h.requests(1).await[0];
    assert!(
        last_user_text(request)
            .unwrap()
            .contains("Write a haiku about frogs"),
        "{request}"
    );
    let tools = request["tools"].as_array().unwrap();
    let listing = tools
        .iter()
        .find(|t| t["function"]["name"] == "execute_skill")
        .unwrap()["function"]["description"]
        .as_str()
        .unwrap();
    assert!(listing.contains("- haiku: A haiku about it"), "{listing}");

    std::fs::remove_file(&file).unwrap();
    listing_until(&h, |l| !l.contains("/haiku")).await;
    h.channel.dm(1, "/haiku again").await;
    h.wait_for("the refusal", |l| l.any_contains("Unknown command /haiku"))
        .await;
    h.stop().await;
}

/// Sends `/skills` until the latest listing satisfies `done` (at most ~10 s).
async fn listing_until(h: &Harness, done: impl Fn(&str) -> bool) {
    for _ in 0..40 {
        let before = h.channel.log().count_containing("**Skills**");
        h.channel.dm(1, "/skills").await;
        let log = h
            .wait_for("a listing", |l| l.count_containing("**Skills**") > before)
            .await;
        if done(&log.find("**Skills**").unwrap().text) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    panic!("the skills listing never changed");
}

#[tokio::test]
async fn a_user_runs_a_skill_and_the_model_can_expand_one() {
    let skills = tempfile::tempdir().unwrap();
    std::fs::write(
        skills.path().join("standup.md"),
        "---\nname: standup\ndescription: Turn notes into a stand-up update\n---\n\
         Write a stand-up update (yesterday / today / blockers) from:\n{{args}}",
    )
    .unwrap();
    std::fs::write(
        skills.path().join("help.md"),
        "---\ndescription: clash\n---\nx",
    )
    .unwrap();
    let dir = skills.path().display().to_string();
    let h = Harness::with(&[("SKILLS_DIR", dir.as_str())]).await;

    h.channel.dm(1, "/skills").await;
    let log = h
        .wait_for("the listing", |l| l.any_contains("**Skills**"))
        .await;
    let listing = &log.find("**Skills**").unwrap().text;
    assert!(
        listing.contains("/standup: Turn notes into a stand-up update")
            && listing.contains("/summarize:")
            && !listing.contains("/help:"),
        "{listing}"
    );

    // `/standup <notes>`: the model gets the expanded instructions.
    h.llm.push(Reply::text("Yesterday: shipped the parser."));
    h.channel
        .dm(1, "/standup shipped the parser\nblocked on review")
        .await;
    h.wait_for("the answer", |l| {
        l.has_text("Yesterday: shipped the parser.")
    })
    .await;
    let asked = last_user_text(&h.requests(1).await[0]).unwrap();
    assert!(
        asked.contains("The user ran the skill /standup")
            && asked.contains("Write a stand-up update")
            && asked.contains("shipped the parser\nblocked on review"),
        "{asked}"
    );

    // The model sees names and descriptions only, and expands one by tool.
    h.llm.push(Reply::tool_calls([(
        "call_skill",
        "execute_skill",
        json!({"name": "standup", "arguments": "fixed the build"}),
    )]));
    h.llm.push(Reply::text("Done."));
    h.channel.dm(1, "make my stand-up: fixed the build").await;
    h.wait_for("the second answer", |l| l.has_text("Done."))
        .await;
    let requests = h.requests(3).await;
    let tool = requests[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "execute_skill")
        .unwrap()
        .clone();
    let description = tool["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("- standup: Turn notes into a stand-up update")
            && !description.contains("blockers"),
        "listed, not expanded: {description}"
    );
    let result = tool_result(&requests[2], "call_skill");
    assert!(
        result.contains("Write a stand-up update") && result.contains("fixed the build"),
        "{result}"
    );
    h.stop().await;
}
