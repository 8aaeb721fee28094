//! Preference learning on every message: a single message updates the user's
//! preferences with frequency statistics, a garbage reply falls back to the
//! keyword rules, and the cost stays at one model call per user per
//! `MEMORY_LEARN_EVERY` eligible messages (commands and short ones skipped).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common::{backends, db_url, harness, open_store, provider};
use crate::support::e2e::{messages, Harness};
use crate::support::fake_llm::{FakeLlm, Reply};

use std::time::Duration;

use chrono::Utc;
use serde_json::Value;
use switchboard::memory::{Extractor, LearnMode, LearnedBy, MemoryBook, MemoryConfig};
use switchboard::store::{MemoryKind, MemoryOwner, MemoryRecord, MemoryStats};
use switchboard_platform::{Platform, UserId};

fn owner() -> MemoryOwner {
    MemoryOwner::new(Platform::Console, UserId(1))
}

fn is_learning(request: &Value) -> bool {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .starts_with("You learn the USER's lasting preferences")
}

/// Waits (bounded) until user 1 has a preference for which `check` holds.
async fn preference(h: &Harness, check: impl Fn(&MemoryRecord) -> bool) -> MemoryRecord {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let all = h
            .running
            .store
            .memories()
            .of(owner(), &[MemoryKind::Preference], 100, Utc::now())
            .await
            .unwrap();
        if let Some(m) = all.into_iter().find(|m| check(m)) {
            return m;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no such preference learned"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (bounded) until memory `id`'s statistics satisfy `check`.
async fn stats_when(h: &Harness, id: i64, check: impl Fn(&MemoryStats) -> bool) -> MemoryStats {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let s = h
            .running
            .store
            .memories()
            .stats(owner(), id)
            .await
            .unwrap()
            .unwrap();
        if check(&s) {
            return s;
        }
        assert!(tokio::time::Instant::now() < deadline, "{s:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_single_message_updates_preferences_with_statistics() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN_EVERY", "1")], &db).await;
        h.llm.set_responder(|req| {
            if is_learning(req) {
                Reply::text(r#"{"preferences": [{"content": "The user wants answers as bullet points", "confidence": 0.8}]}"#)
            } else {
                Reply::text("Noted!")
            }
        });
        h.channel
            .dm(1, "From now on give me bullet points please")
            .await;
        let m = preference(&h, |m| m.content.contains("bullet points")).await;
        assert!(m.source_ref.starts_with("learn:"), "{}", m.source_ref);
        // The observation is written just after the memory: wait for it.
        let stats = stats_when(&h, m.id, |s| s.last_seen.is_some()).await;
        assert_eq!(stats.seen_count, 1);
        assert!((stats.confidence - 0.8).abs() < 1e-9);

        // Said again: the same preference, seen twice, surer.
        h.channel
            .dm(1, "Again: bullet points, not paragraphs")
            .await;
        let stats = stats_when(&h, m.id, |s| s.seen_count == 2).await;
        assert!(stats.confidence > 0.8, "{stats:?}");
        // The user sees the statistics in the trace.
        h.channel.dm(1, &format!("/memory trace {}", m.id)).await;
        h.wait_for("the trace", |l| l.any_contains("seen 2 times"))
            .await;
        // Commands and very short messages cost no learning call.
        h.channel.dm(1, "ok").await;
        h.wait_for("the answer", |l| l.sent().len() >= 4).await;
        let calls = h
            .llm
            .requests()
            .await
            .iter()
            .filter(|r| is_learning(r))
            .count();
        assert_eq!(calls, 2);
        h.stop().await;
    }
}

#[tokio::test]
async fn a_garbage_reply_falls_back_to_the_keyword_rules() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN_EVERY", "1")], &db).await;
        h.llm.set_responder(|req| {
            if is_learning(req) {
                Reply::text("Sure! The user seems to like tea.")
            } else {
                Reply::text("Noted!")
            }
        });
        h.channel
            .dm(1, "I prefer green tea over coffee. 我不喜欢表格。")
            .await;
        let m = preference(&h, |m| {
            m.content == "The user prefers green tea over coffee"
        })
        .await;
        preference(&h, |m| m.content == "用户不喜欢表格").await;
        let stats = stats_when(&h, m.id, |s| s.last_seen.is_some()).await;
        assert_eq!(stats.seen_count, 1);
        assert!((stats.confidence - 0.5).abs() < 1e-9);
        h.stop().await;
    }
}

/// The measured cost: model calls per 100 user messages (80 eligible, 10
/// commands, 10 very short), with the default `MEMORY_LEARN_EVERY=5`.
#[tokio::test]
async fn learning_costs_one_call_per_n_eligible_messages() {
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&db_url(&db, dir.path())).await;
        let llm = FakeLlm::start().await;
        llm.set_responder(|_| Reply::text(r#"{"preferences": []}"#));
        let config = MemoryConfig::default();
        assert_eq!((config.learn, config.learn_every), (LearnMode::Model, 5));
        let extractor = Extractor::new(MemoryBook::new(store.clone(), config), provider(&llm));
        let mut calls = 0;
        let mut by_model = 0;
        for i in 0..100 {
            let text = match i % 10 {
                0 => "/usage".to_owned(),
                1 => "ok".to_owned(),
                _ => format!("Tell me more about topic number {i}"),
            };
            let report = extractor
                .learn(owner(), "learn:s", &[], &text, Utc::now())
                .await
                .unwrap();
            calls += report.model_calls;
            by_model += u32::from(report.by == LearnedBy::Model);
        }
        eprintln!("preference learning: {calls} model calls per 100 user messages");
        assert_eq!(calls, 16);
        assert_eq!(by_model, 16);
        assert_eq!(llm.requests().await.len(), 16);

        // The rules alone never call the model.
        let rules = MemoryConfig {
            learn: LearnMode::Rules,
            ..MemoryConfig::default()
        };
        let extractor = Extractor::new(MemoryBook::new(store.clone(), rules), provider(&llm));
        let report = extractor
            .learn(
                owner(),
                "learn:s",
                &[],
                "I really prefer dark mode",
                Utc::now(),
            )
            .await
            .unwrap();
        assert_eq!(
            (report.by, report.model_calls, report.saved.len()),
            (LearnedBy::Rules, 0, 1)
        );
        assert_eq!(llm.requests().await.len(), 16);
    }
}

#[tokio::test]
async fn learning_goes_to_the_cheap_model_added_while_running() {
    use switchboard::store::{ModelRow, Prices};
    let db = None;
    let h = harness(
        &[("MEMORY_LEARN_EVERY", "1"), ("MODEL_ROUTE_CHEAP", "mini")],
        &db,
    )
    .await;
    h.llm.set_responder(|_| Reply::text("Noted!"));
    // Not in the catalogue yet: the agent's model learns.
    h.channel
        .dm(1, "From now on give me bullet points please")
        .await;
    h.wait_for("the first answer", |l| l.any_contains("Noted!"))
        .await;
    h.idle().await;
    let main_learned = |reqs: &[Value]| reqs.iter().filter(|r| is_learning(r)).count();
    let before = main_learned(&h.llm.requests().await);
    assert_eq!(before, 1, "no cheap model: the agent's");

    let mini = FakeLlm::start().await;
    mini.set_responder(|_| {
        Reply::text(
            r#"{"preferences": [{"content": "The user wants short answers", "confidence": 0.7}]}"#,
        )
    });
    h.running
        .store
        .put_model(&ModelRow {
            name: "mini".into(),
            api: "openai".into(),
            base_url: mini.base_url(),
            key_env: None,
            url_env: None,
            context_window: Some(16_000),
            prices: Prices {
                input: 0.1,
                output: 0.2,
                cache_read: 0.0,
                cache_write: 0.0,
            },
            vision: false,
            tools: true,
            reasoning: false,
            role: None,
            rank: 0,
            seeded: false,
        })
        .await
        .unwrap();
    h.channel
        .dm(1, "And please keep your answers short from now on")
        .await;
    let m = preference(&h, |m| m.content.contains("short answers")).await;
    assert!(m.source_ref.starts_with("learn:"));
    assert_eq!(
        main_learned(&h.llm.requests().await),
        before,
        "the cheap model learned this time"
    );
    assert!(mini.requests().await.iter().all(is_learning));
    h.stop().await;
}
