//! Semantic chat-history search (`EMBEDDINGS_*`, issue 37 item 6) through
//! the strict fake embeddings server and real `query_my_chat_history` calls,
//! on SQLite and PostgreSQL: a message found by meaning with no shared word,
//! another session's messages never returned, the fall-back to words when
//! the endpoint is down, and the back-fill of existing messages (whose
//! vectors go with them on `/clear`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common;
use crate::support;

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::fake_embeddings::FakeEmbeddings;
use switchboard::llm::Message;
use switchboard::memory::semantic::{
    backfill_history, embed_pending_messages, run_worker, Embedder,
};
use switchboard::memory::EmbeddingsConfig;
use switchboard::store::{SessionId, SessionKey, Store};
use switchboard::tools::{looking_back_tools, Tool, ToolContext};
use switchboard_platform::{ChatId, Platform, UserId};
use tokio_util::sync::CancellationToken;

const MODEL: &str = "fake-embed-1";

fn config(fake: &FakeEmbeddings) -> EmbeddingsConfig {
    let mut c = EmbeddingsConfig::new(&fake.base_url(), MODEL);
    c.batch = 4;
    c.query_timeout = Duration::from_millis(500);
    c
}

/// Session of Telegram user `user` in their DM, with `messages` appended.
async fn session(store: &Store, user: i64, messages: &[Message]) -> SessionId {
    let key = SessionKey {
        platform: Platform::Telegram,
        chat: ChatId(user),
        thread: None,
        user: UserId(user),
    };
    let session = store.sessions().open(&key).await.unwrap();
    store.history().append(&session, messages).await.unwrap();
    session
}

/// A's history: the automobile said once, unrelated chat, a tool result.
fn history_a() -> Vec<Message> {
    let mut m = vec![
        Message::user("I finally bought the red automobile I wanted"),
        Message::assistant("Congratulations on the purchase!"),
        Message::tool_result("c1", "weather: sedan-shaped clouds over Lyon"),
    ];
    for i in 0..12 {
        m.push(Message::user(format!(
            "Question {i} on the quarterly report"
        )));
        m.push(Message::assistant(format!(
            "Answer {i}: the numbers look fine"
        )));
    }
    m.push(Message::user("The car wash near the office was closed"));
    m
}

async fn search(store: &Store, c: Option<EmbeddingsConfig>, s: &SessionId, query: &str) -> String {
    let tools: Vec<Arc<dyn Tool>> = looking_back_tools(store.clone(), c);
    let tool = tools
        .iter()
        .find(|t| t.spec().name == "query_my_chat_history")
        .unwrap();
    let ctx = ToolContext {
        session_id: s.clone(),
        ..ToolContext::default()
    };
    tool.call(json!({ "query": query }), &ctx).await.unwrap()
}

async fn embed_all(store: &Store, c: &EmbeddingsConfig) {
    let embedder = Embedder::new(c.clone());
    while embed_pending_messages(store, &embedder).await.unwrap() > 0 {}
}

#[tokio::test]
async fn a_message_is_found_by_meaning_and_never_from_another_session() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        let a = session(&store, 1, &history_a()).await;
        let b = session(
            &store,
            2,
            &[Message::user("My sedan broke down on the motorway")],
        )
        .await;
        // The background worker embeds them, off any reply.
        let stop = CancellationToken::new();
        let worker = tokio::spawn(run_worker(
            store.clone(),
            Embedder::new(config(&fake)),
            stop.clone(),
        ));
        let deadline = Instant::now() + Duration::from_secs(20);
        while store
            .history()
            .embedding_progress(MODEL)
            .await
            .unwrap()
            .waiting
            > 0
        {
            assert!(
                Instant::now() < deadline,
                "the worker did not embed the history"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.cancel();
        worker.await.unwrap();
        // User and assistant texts only: 27 of A's and B's one; the tool
        // result was never sent.
        assert_eq!(
            store
                .history()
                .embedding_progress(MODEL)
                .await
                .unwrap()
                .embedded,
            28
        );
        let sent = fake.requests().concat();
        assert!(!sent.iter().any(|t| t.contains("clouds")), "{sent:?}");

        // By words alone, "vehicle" is in no message.
        let words = search(&store, None, &a, "vehicle").await;
        assert!(words.contains("none on page 1"), "{words}");
        let found = search(&store, Some(config(&fake)), &a, "vehicle").await;
        assert!(found.contains("best matches first"), "{found}");
        let lines: Vec<&str> = found.lines().filter(|l| l.starts_with("- [#")).collect();
        assert!(lines[0].contains("red automobile"), "{found}");
        assert!(lines.iter().any(|l| l.contains("car wash")), "{found}");
        // B's sedan is as close in meaning, but B's.
        assert!(!found.contains("sedan"), "{found}");
        assert!(!found.contains("quarterly"), "unrelated: {found}");
        // Words and meaning together rank first.
        let found = search(&store, Some(config(&fake)), &a, "car").await;
        let lines: Vec<&str> = found.lines().filter(|l| l.starts_with("- [#")).collect();
        assert!(lines[0].contains("car wash"), "{found}");
        assert!(lines[1].contains("red automobile"), "{found}");
        assert_eq!(lines.len(), 2, "{found}");
        // And B finds its own message, not A's.
        let found = search(&store, Some(config(&fake)), &b, "automobile").await;
        assert!(
            found.contains("sedan broke down") && !found.contains("red"),
            "{found}"
        );
    }
}

#[tokio::test]
async fn the_embedder_down_leaves_the_search_by_words() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        let a = session(&store, 1, &history_a()).await;
        embed_all(&store, &config(&fake)).await;
        fake.set_down(true);
        for query in ["car", "vehicle", "question report"] {
            let words = search(&store, None, &a, query).await;
            let down = search(&store, Some(config(&fake)), &a, query).await;
            assert_eq!(down, words, "{query}");
        }
        // Late is as good as down.
        fake.set_down(false);
        fake.set_delay(Duration::from_secs(3));
        let words = search(&store, None, &a, "vehicle").await;
        assert_eq!(
            search(&store, Some(config(&fake)), &a, "vehicle").await,
            words
        );
        fake.set_delay(Duration::ZERO);
    }
}

#[tokio::test]
async fn backfill_embeds_existing_messages_and_clear_drops_their_vectors() {
    let fake = FakeEmbeddings::start(MODEL).await;
    for (store, _dir) in memory_common::stores().await {
        let a = session(&store, 1, &history_a()).await;
        let c = config(&fake);
        let embedder = Embedder::new(c.clone());
        let before = store.history().embedding_progress(MODEL).await.unwrap();
        assert_eq!((before.embedded, before.waiting), (0, 28));
        let mut seen = Vec::new();
        let done = backfill_history(&store, &embedder, &mut |s, w| seen.push((s, w)))
            .await
            .unwrap();
        assert_eq!((done.settled, done.embedded), (28, 27));
        assert_eq!(seen.last(), Some(&(28, 0)));
        // Batches of EMBEDDINGS_BATCH at most.
        assert!(fake.requests().iter().all(|r| r.len() <= 4));
        let again = backfill_history(&store, &embedder, &mut |_, _| {})
            .await
            .unwrap();
        assert_eq!(again.settled, 0);
        let found = search(&store, Some(c.clone()), &a, "vehicle").await;
        assert!(found.contains("red automobile"), "{found}");

        // `/clear` deletes the messages; their vectors go with them.
        store.history().clear(&a).await.unwrap();
        let after = store.history().embedding_progress(MODEL).await.unwrap();
        assert_eq!((after.embedded, after.waiting), (0, 0));
        let found = search(&store, Some(c), &a, "vehicle").await;
        assert!(found.contains("none on page 1"), "{found}");
    }
}
