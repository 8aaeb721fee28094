//! Compaction through the real gateway with a scripted model: the memory flush
//! first, then the summary (tool results by key fields) replacing the head,
//! a tail that never starts with an orphan tool result, task state kept, the
//! fallback to trimming, and `/clear` wiping task and execution state.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common;
use crate::support;

use memory_common::{backends, harness};

use chrono::Utc;
use serde_json::{json, Value};
use support::e2e::{messages, Harness};
use support::fake_llm::Reply;
use switchboard::agent::SUMMARY_MARK;
use switchboard::llm::{Message, ToolCall};
use switchboard::store::{MemoryOwner, SessionId};
use switchboard_platform::{Platform, UserId};

/// A 20K-token window: compaction above 10K tokens, a tail of about 5K.
const WINDOW: &[(&str, &str)] = &[("LLM_CONTEXT_WINDOW", "20000")];

fn system(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn kind(request: &Value) -> &'static str {
    let s = system(request);
    if s.starts_with("You extract long-term memory atoms") {
        "extract"
    } else if s.starts_with("You compress the earlier part") {
        "summarize"
    } else {
        "turn"
    }
}

fn content(m: &Value) -> String {
    m["content"].as_str().unwrap_or_default().to_owned()
}

/// About 16K tokens of history: rounds of a question, a tool call, a JSON
/// result and an answer.
async fn long_history(h: &Harness) -> SessionId {
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
        let result = json!({"status": "ok", "name": format!("report {i}"), "rows": vec!["x".repeat(40); 30], "debug": "y".repeat(200)});
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
    session
}

const SUMMARY: &str = "The user is building a weekly reporting pipeline and reviewed 24 reports.";

fn responder(summarizer_works: bool) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |req| {
        match kind(req) {
        "extract" => Reply::text(r#"{"memories": [{"kind": "preference", "content": "The user wants weekly reports on Mondays"}]}"#),
        "summarize" if summarizer_works => Reply::text(
            &json!({
                "summary": SUMMARY,
                "task_state": {
                    "current_goal": "Ship the weekly reporting pipeline",
                    "open_loops": ["pick a chart library"],
                    "important_facts": ["Reports go to the finance team", "Account balance is 500 USD"],
                    "last_decision": "Use PostgreSQL"
                }
            })
            .to_string(),
        ),
        "summarize" => Reply::status(500, json!({"error": {"message": "overloaded", "type": "server_error"}})),
        _ => Reply::text("Continuing."),
    }
    }
}

#[tokio::test]
async fn a_long_conversation_is_flushed_summarized_and_continues_from_the_tail() {
    for db in backends().await {
        let h = harness(WINDOW, &db).await;
        let session = long_history(&h).await;
        let before = h
            .running
            .store
            .history()
            .recent(&session, 200)
            .await
            .unwrap()
            .len();
        h.llm.set_responder(responder(true));
        h.channel.dm(1, "What is the next step?").await;
        h.wait_for("the answer", |l| l.any_contains("Continuing."))
            .await;
        h.idle().await;

        let requests = h.llm.requests().await;
        let kinds: Vec<&str> = requests.iter().map(kind).collect();
        assert_eq!(
            kinds,
            ["extract", "summarize", "turn"],
            "memory flush first, then the summary"
        );

        // The head went to the summarizer with tool results reduced to key fields.
        let transcript = content(&messages(&requests[1])[1]);
        assert!(
            transcript.contains("[tool result] {status: ok, name: report 5} (4 fields)"),
            "{}",
            &transcript[..600.min(transcript.len())]
        );
        assert!(
            !transcript.contains(&"y".repeat(200)),
            "raw tool payloads are not summarized verbatim"
        );

        // The model continued from the summary and a tail that starts cleanly.
        let sent = messages(&requests[2]);
        assert_eq!(content(&sent[1]), format!("{SUMMARY_MARK}\n{SUMMARY}"));
        assert_eq!(sent[2]["role"], "assistant");
        assert_ne!(
            sent[3]["role"], "tool",
            "the tail never starts with an orphan tool result"
        );
        assert_eq!(content(sent.last().unwrap()), "What is the next step?");
        let tail = sent.len() - 3;
        assert!(
            tail >= 4 && tail < before,
            "kept {tail} of {before} messages"
        );

        // The flush saved a memory; the compaction is persisted.
        let owner = MemoryOwner::new(Platform::Console, UserId(1));
        let memories = h
            .running
            .store
            .memories()
            .of(owner, &[], 10, Utc::now())
            .await
            .unwrap();
        assert!(memories
            .iter()
            .any(|m| m.content.contains("weekly reports on Mondays")
                && m.source_ref == format!("chat:{session}")));
        let state = h.running.store.sessions().state(&session).await.unwrap();
        assert_eq!(state.summary.as_deref(), Some(SUMMARY));
        let task: Value = serde_json::from_str(state.task_state.as_deref().unwrap()).unwrap();
        assert_eq!(task["current_goal"], "Ship the weekly reporting pipeline");
        assert_eq!(
            task["important_facts"],
            json!(["Reports go to the finance team"]),
            "dynamic facts are not kept"
        );
        let live = h
            .running
            .store
            .history()
            .recent(&session, 500)
            .await
            .unwrap();
        assert_eq!(
            live.len(),
            tail + 1,
            "the folded head is archived; the tail, the input and the answer stay live"
        );

        // The next turn starts from the stored summary and sees the task state.
        h.channel.dm(1, "And after that?").await;
        h.wait_for("the second answer", |l| {
            l.count_containing("Continuing.") >= 2
        })
        .await;
        let next = h
            .llm
            .requests()
            .await
            .into_iter()
            .filter(|r| kind(r) == "turn")
            .nth(1)
            .unwrap();
        let sent = messages(&next);
        assert_eq!(content(&sent[1]), format!("{SUMMARY_MARK}\n{SUMMARY}"));
        let prompt = system(&next);
        assert!(
            prompt.contains("[Task state")
                && prompt.contains("Current goal: Ship the weekly reporting pipeline"),
            "{prompt}"
        );
        assert!(!prompt.contains("Account balance"));
        h.stop().await;
    }
}

#[tokio::test]
async fn a_chat_of_many_short_messages_is_compacted_by_count() {
    for db in backends().await {
        // A big window: 230 short messages are far under the token threshold.
        let h = harness(&[("LLM_CONTEXT_WINDOW", "128000")], &db).await;
        let session = h.session(1, 1).await;
        let chat: Vec<Message> = (0..230)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user(format!("short question {i}"))
                } else {
                    Message::assistant(format!("short answer {i}"))
                }
            })
            .collect();
        h.running
            .store
            .history()
            .append(&session, &chat)
            .await
            .unwrap();
        h.llm.set_responder(responder(true));
        h.channel.dm(1, "and now?").await;
        h.wait_for("the answer", |l| l.any_contains("Continuing."))
            .await;
        h.idle().await;

        let requests = h.llm.requests().await;
        let kinds: Vec<&str> = requests.iter().map(kind).collect();
        assert_eq!(
            kinds,
            ["extract", "summarize", "turn"],
            "compacted by count"
        );
        let sent = messages(&requests[2]);
        assert_eq!(content(&sent[1]), format!("{SUMMARY_MARK}\n{SUMMARY}"));
        // Nothing fell out unsummarized: the oldest message went to the summarizer.
        let transcript = content(&messages(&requests[1])[1]);
        assert!(
            transcript.contains("short question 0"),
            "{}",
            &transcript[..200]
        );
        let kept = sent.len() - 3;
        assert!(
            kept <= switchboard::agent::MAX_CONTEXT_MESSAGES / 2 + 1,
            "kept {kept}"
        );
        let live = h
            .running
            .store
            .history()
            .recent(&session, 1_000)
            .await
            .unwrap();
        assert_eq!(live.len(), kept + 1, "the head is archived");
        h.stop().await;
    }
}

#[tokio::test]
async fn when_summarizing_fails_the_head_is_trimmed_and_the_tail_kept() {
    for db in backends().await {
        let h = harness(WINDOW, &db).await;
        let session = long_history(&h).await;
        let stored = h
            .running
            .store
            .history()
            .recent(&session, 200)
            .await
            .unwrap();
        h.llm.set_responder(responder(false));
        h.channel.dm(1, "What is the next step?").await;
        h.wait_for("the answer", |l| l.any_contains("Continuing."))
            .await;
        h.idle().await;

        let requests = h.llm.requests().await;
        let turn = requests.iter().find(|r| kind(r) == "turn").unwrap();
        let sent = messages(turn);
        let first = content(&sent[1]);
        assert!(
            first.starts_with(SUMMARY_MARK) && first.contains("trimmed"),
            "{first}"
        );
        // The tail is the stored history's end (earlier tool results shrunk as in any request).
        let tail = &sent[3..sent.len() - 1];
        let expected = &stored[stored.len() - tail.len()..];
        for (sent, stored) in tail.iter().zip(expected) {
            assert_eq!(sent["role"], serde_json::to_value(stored.role).unwrap());
            if sent["role"] != "tool" {
                assert_eq!(content(sent), stored.content);
            }
        }
        assert!(tail.len() >= 4);
        assert_ne!(sent[3]["role"], "tool");
        h.stop().await;
    }
}

#[tokio::test]
async fn clear_wipes_history_task_state_and_execution_state() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        h.llm.push(Reply::tool_calls([(
            "q1",
            "ask_user",
            json!({"question": "Which region should I deploy to?"}),
        )]));
        h.channel.dm(1, "Deploy the site").await;
        h.wait_for("the question", |l| {
            l.any_contains("Which region should I deploy to?")
        })
        .await;
        h.idle().await;

        h.llm.push(Reply::text("Deploying to eu-west."));
        h.channel.dm(1, "eu-west").await;
        h.wait_for("the answer", |l| l.any_contains("Deploying to eu-west."))
            .await;
        h.idle().await;
        let resumed = &h.requests(2).await[1];
        let prompt = system(resumed);
        assert!(
            prompt.contains("[Execution state — paused work")
                && prompt.contains("Which region should I deploy to?"),
            "{prompt}"
        );
        assert!(prompt.contains("Goal: Deploy the site"), "{prompt}");

        let session = h.session(1, 1).await;
        h.running
            .store
            .sessions()
            .set_doc(
                &session,
                switchboard::store::StateDoc::Task,
                Some(r#"{"current_goal":"Deploy"}"#),
            )
            .await
            .unwrap();
        let state = h.running.store.sessions().state(&session).await.unwrap();
        assert!(state.execution_state.is_some() && state.task_state.is_some());

        h.channel.dm(1, "/clear").await;
        h.wait_for("the clear", |l| {
            l.any_contains("task state and execution state")
        })
        .await;
        let state = h.running.store.sessions().state(&session).await.unwrap();
        assert_eq!(
            (state.task_state, state.execution_state, state.summary),
            (None, None, None)
        );
        assert!(h
            .running
            .store
            .history()
            .recent(&session, 10)
            .await
            .unwrap()
            .is_empty());

        h.llm.push(Reply::text("Hello again."));
        h.channel.dm(1, "hi").await;
        h.wait_for("a fresh answer", |l| l.any_contains("Hello again."))
            .await;
        let fresh = &h.requests(3).await[2];
        assert!(
            !system(fresh).contains("[Task state") && !system(fresh).contains("[Execution state")
        );
        assert_eq!(messages(fresh).len(), 2, "system + the new message");
        h.stop().await;
    }
}
