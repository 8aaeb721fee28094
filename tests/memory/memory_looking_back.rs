//! The agent looking back (issue 36 items 1–2): compaction keeps the address
//! the user gave word for word in its summary (a `[kept verbatim]` block,
//! traced as a `compaction` record), and an early detail no rule keeps is
//! found through `query_my_chat_history` among the archived rows (Chinese by
//! character pairs too); `get_my_feedback` and `get_my_reflections` read the
//! user's ratings and the agent's own notes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common;
use crate::support;

use memory_common::{backends, harness};

use serde_json::{json, Value};
use support::e2e::{files_under, messages, tool_result, tool_results, Harness};
use support::fake_llm::Reply;
use switchboard::agent::KEPT_MARK;
use switchboard::llm::Message;
use switchboard::store::{MemoryKind, MemoryOwner, NewMemory, SessionId};
use switchboard_platform::{Platform, UserId};

/// A 20K-token window: compaction above 10K tokens.
const WINDOW: &[(&str, &str)] = &[("LLM_CONTEXT_WINDOW", "20000")];
const ADDRESS: &str = "12 Rue des Lilas, 69003 Lyon";
const DISH: &str = "the cassoulet my grandmother made in Toulouse";
const 地址: &str = "北京市朝阳区建国路88号";

fn kind(request: &Value) -> &'static str {
    let system = messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if system.starts_with("You extract long-term memory atoms") {
        "extract"
    } else if system.starts_with("You compress the earlier part") {
        "summarize"
    } else {
        "turn"
    }
}

/// The early details, then ~15K tokens of unrelated rounds.
async fn long_history(h: &Harness) -> SessionId {
    let session = h.session(1, 1).await;
    let mut history = vec![
        Message::user(format!("For the delivery: my new address is {ADDRESS}.")),
        Message::assistant("Noted, I will use it for the delivery."),
        Message::user(format!("By the way, my favourite dish is {DISH}.")),
        Message::assistant("That sounds delicious."),
        Message::user(format!("我的公司地址是{地址}。")),
        Message::assistant("好的，记下了。"),
    ];
    for i in 0..70 {
        history.push(Message::user(format!(
            "Question {i}: {}",
            "please look at the quarterly report data ".repeat(14)
        )));
        history.push(Message::assistant(format!(
            "Answer {i}: {}",
            "the numbers look fine ".repeat(14)
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

/// Turns call the history tool once (as `call`) with `args`, then answer
/// with what it returned.
fn responder(call: &'static str, args: Value) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |req| match kind(req) {
        "extract" => Reply::text(r#"{"memories": []}"#),
        "summarize" => Reply::text(
            &json!({"summary": "The user reviewed forty quarterly reports.", "task_state": {}})
                .to_string(),
        ),
        _ => match tool_results(req).into_iter().find(|(id, _)| id == call) {
            None => Reply::tool_calls([(call, "query_my_chat_history", args.clone())]),
            Some((_, found)) => Reply::text(&format!("From our history: {found}")),
        },
    }
}

#[tokio::test]
async fn an_early_detail_is_found_after_compaction_folded_it_away() {
    for db in backends().await {
        let h = harness(WINDOW, &db).await;
        let session = long_history(&h).await;
        h.llm
            .set_responder(responder("h1", json!({"query": "favourite dish"})));
        h.channel
            .dm(1, "Which dish did I say was my favourite?")
            .await;
        h.wait_for("the answer", |l| l.any_contains("From our history"))
            .await;
        h.idle().await;

        let requests = h.llm.requests().await;
        let kinds: Vec<&str> = requests.iter().map(kind).collect();
        assert!(
            kinds.contains(&"summarize"),
            "the conversation was compacted first: {kinds:?}"
        );
        // The summary the model continued from keeps the address verbatim…
        let first_turn = requests.iter().find(|r| kind(r) == "turn").unwrap();
        let summary = messages(first_turn)[1]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        let block = summary
            .split_once(KEPT_MARK)
            .map(|(_, b)| b)
            .unwrap_or_else(|| panic!("{summary}"));
        assert!(
            block.contains(&format!(
                "user: For the delivery: my new address is {ADDRESS}."
            )),
            "{summary}"
        );
        assert!(block.contains(地址), "{summary}");
        // …but not the dish: only the history tool finds it, archived.
        assert!(
            !first_turn.to_string().contains("cassoulet"),
            "the early message was folded away"
        );
        let last = requests.iter().rfind(|r| kind(r) == "turn").unwrap();
        let found = tool_result(last, "h1");
        assert!(found.contains(DISH), "{found}");
        assert!(found.contains("· user"), "{found}");
        assert!(
            !found.contains("Question 3"),
            "only matching messages: {found}"
        );
        h.wait_for("the answer quoting it", |l| l.any_contains("cassoulet"))
            .await;
        // Archived, not deleted: the live history no longer holds it.
        let live = h
            .running
            .store
            .history()
            .recent(&session, 500)
            .await
            .unwrap();
        assert!(live
            .iter()
            .all(|m| !m.content.starts_with("By the way, my favourite dish")));
        // The turn's trace says what compaction did and kept.
        let traces = files_under(&h.data_dir().join("scratchpad"));
        let record = traces
            .iter()
            .flat_map(|p| {
                std::fs::read_to_string(p)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .find(|v| v["type"] == "compaction")
            .expect("a compaction record in the trace");
        assert!(
            record["before"]["estimate"].as_u64() > record["after"]["estimate"].as_u64(),
            "{record}"
        );
        assert!(record["kept"].to_string().contains(ADDRESS), "{record}");
        h.stop().await;
    }
}

#[tokio::test]
async fn chinese_words_time_ranges_and_pages() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        let session = h.session(1, 1).await;
        let mut history = vec![Message::user(format!("我的公司地址是{地址}。"))];
        history.extend((0..25).map(|i| Message::user(format!("order number {i} shipped"))));
        h.running
            .store
            .history()
            .append(&session, &history)
            .await
            .unwrap();

        h.llm
            .set_responder(responder("h1", json!({"query": "地址"})));
        h.channel.dm(1, "公司地址是什么？").await;
        h.wait_for("the answer", |l| l.any_contains(地址)).await;
        h.idle().await;

        // 25 matches: page 3 holds the last 5 and says there are no more.
        h.llm.set_responder(responder(
            "h2",
            json!({"query": "order shipped", "page": 3}),
        ));
        h.channel.dm(1, "Which orders shipped first?").await;
        h.wait_for("the page", |l| l.any_contains("order number 0 shipped"))
            .await;
        h.idle().await;
        let requests = h.llm.requests().await;
        let last = requests.iter().rfind(|r| kind(r) == "turn").unwrap();
        let found = tool_result(last, "h2");
        assert_eq!(found.matches("order number").count(), 5, "{found}");
        assert!(found.contains("No more matches."), "{found}");

        // Nothing was written after tomorrow.
        let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
            .format("%Y-%m-%d")
            .to_string();
        h.llm.set_responder(responder(
            "h3",
            json!({"query": "order", "since": tomorrow}),
        ));
        h.channel.dm(1, "Any order since tomorrow?").await;
        h.wait_for("none", |l| l.any_contains("none on page 1"))
            .await;
        h.stop().await;
    }
}

#[tokio::test]
async fn the_agent_reads_its_own_notes_and_the_users_ratings_only() {
    for db in backends().await {
        let h = harness(&[], &db).await;
        let store = &h.running.store;
        let me = MemoryOwner::new(Platform::Console, UserId(1));
        let other = MemoryOwner::new(Platform::Console, UserId(2));
        let now = chrono::Utc::now();
        let note = |content: &str| NewMemory {
            kind: MemoryKind::Reflection,
            content: content.into(),
            source_ref: "reflection".into(),
            importance: 0.5,
            expires_at: None,
        };
        store
            .memories()
            .insert(me, &note("Open loop: send the CV to Acme."), &[], now)
            .await
            .unwrap();
        store
            .memories()
            .insert(other, &note("Someone else's note."), &[], now)
            .await
            .unwrap();
        let session = h.session(1, 1).await;
        let id: switchboard::domain::FeedbackId = "fb-1".parse().unwrap();
        store
            .memories()
            .create_feedback(
                &id,
                &session,
                me,
                "How do I bake bread?",
                "Knead for ten minutes.",
                now,
            )
            .await
            .unwrap();
        store
            .memories()
            .rate_feedback(&id, me, -1, now)
            .await
            .unwrap();

        h.llm.push(Reply::tool_calls([
            ("r1", "get_my_reflections", json!({})),
            ("f1", "get_my_feedback", json!({"rating": "not_helpful"})),
        ]));
        h.llm.push(Reply::text("Looked back."));
        h.channel.dm(1, "How am I doing?").await;
        h.wait_for("the answer", |l| l.any_contains("Looked back."))
            .await;
        h.idle().await;
        let requests = h.llm.requests().await;
        let last = requests.iter().rfind(|r| kind(r) == "turn").unwrap();
        let notes = tool_result(last, "r1");
        assert!(notes.contains("send the CV to Acme"), "{notes}");
        assert!(!notes.contains("Someone else"), "{notes}");
        let ratings = tool_result(last, "f1");
        assert!(
            ratings.contains("👎 not helpful") && ratings.contains("How do I bake bread?"),
            "{ratings}"
        );
        h.stop().await;
    }
}
