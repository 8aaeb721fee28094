//! Extraction after a session goes idle, with a scripted model: good atoms are
//! stored with their source, forbidden ones refused, duplicates merged, and
//! L2/L3 refreshed once enough L1 atoms arrived; `/memory trace` shows the source.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common;
use crate::support;

use memory_common::{backends, db_url, harness, open_store, provider};

use std::time::Duration;

use chrono::Utc;
use serde_json::{json, Value};
use support::e2e::{messages, Harness};
use support::fake_llm::{FakeLlm, Reply};
use switchboard::llm::Message;
use switchboard::memory::{Extractor, MemoryBook, MemoryConfig, EXTRACTION_LEASE};
use switchboard::store::{
    IdleSession, MemoryKind, MemoryOwner, MemoryRecord, NewMemory, SessionKey, Store,
};
use switchboard_platform::{Addressed, ChatId, Platform, UserId};

fn owner(user: i64) -> MemoryOwner {
    MemoryOwner::new(Platform::Console, UserId(user))
}

fn system(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn is_extraction(request: &Value) -> bool {
    system(request).starts_with("You extract long-term memory atoms")
}

fn is_layers(request: &Value) -> bool {
    system(request).starts_with("You maintain a layered memory")
}

/// Waits (bounded) until `check` holds for user 1's memories.
async fn memories_until(
    h: &Harness,
    what: &str,
    check: impl Fn(&[MemoryRecord]) -> bool,
) -> Vec<MemoryRecord> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let all = h
            .running
            .store
            .memories()
            .of(owner(1), &[], 100, Utc::now())
            .await
            .unwrap();
        if check(&all) {
            return all;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}: {all:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const ATOMS: &str = r#"{"memories": [
    {"kind": "preference", "content": "The user wants answers as bullet points", "importance": 0.8},
    {"kind": "decision", "content": "The user chose PostgreSQL for production because of replication", "importance": 0.7},
    {"kind": "decision", "content": "The user bought 100 shares of 600519"},
    {"kind": "preference", "content": "The user is tired today"},
    {"kind": "preference", "content": "The user prefers metric units"},
    {"kind": "mood", "content": "happy"}
]}"#;

#[tokio::test]
async fn an_idle_session_is_extracted_under_the_contract() {
    for db in backends().await {
        let h = harness(
            &[("MEMORY_IDLE_SECS", "1"), ("MEMORY_LAYER_EVERY", "50")],
            &db,
        )
        .await;
        // An earlier, equivalent memory: the new atom merges into it.
        let book = MemoryBook::new(h.running.store.clone(), MemoryConfig::default());
        let earlier = NewMemory {
            kind: MemoryKind::Preference,
            content: "The user prefers metric units.".into(),
            source_ref: "chat:earlier#1-2".into(),
            importance: 0.5,
            expires_at: None,
        };
        let existing = book.save(owner(1), earlier, Utc::now()).await.unwrap().id();
        h.llm.set_responder(|req| {
            if is_extraction(req) {
                Reply::text(ATOMS)
            } else {
                Reply::text("Noted!")
            }
        });
        h.channel.dm(1, "Please always use bullet points. We went with PostgreSQL for replication. I bought 100 shares of 600519.").await;
        h.wait_for("the answer", |l| l.any_contains("Noted!")).await;

        // The atoms are saved one by one: wait for the first, the decision
        // and the last one (the merge into the earlier memory).
        let all = memories_until(&h, "extracted memories", |m| {
            m.iter().any(|m| m.content.contains("bullet points"))
                && m.iter().any(|m| m.content.contains("PostgreSQL"))
                && m.iter()
                    .any(|m| m.id == existing && m.source_ref.split_whitespace().count() == 2)
        })
        .await;
        let contents: Vec<&str> = all.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(all.len(), 3, "{contents:?}");
        assert!(
            contents.contains(&"The user chose PostgreSQL for production because of replication")
        );
        assert!(
            !contents
                .iter()
                .any(|c| c.contains("600519") || c.contains("tired") || c.contains("happy")),
            "{contents:?}"
        );
        let session = h.session(1, 1).await;
        let bullet = all.iter().find(|m| m.content.contains("bullet")).unwrap();
        assert_eq!(bullet.kind, MemoryKind::Preference);
        assert!(
            bullet.source_ref.starts_with(&format!("chat:{session}#")),
            "{}",
            bullet.source_ref
        );
        let merged = all
            .iter()
            .find(|m| m.id == existing)
            .expect("the duplicate merged into the earlier memory");
        assert_eq!(
            merged.source_ref.split_whitespace().count(),
            2,
            "{}",
            merged.source_ref
        );

        // The extraction saw the conversation's text, not tool details, once.
        let requests = h.llm.requests().await;
        let extraction: Vec<&Value> = requests.iter().filter(|r| is_extraction(r)).collect();
        assert_eq!(
            extraction.len(),
            1,
            "extracted once until new messages arrive"
        );
        let transcript = messages(extraction[0])[1]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            transcript.contains("[user] Please always use bullet points")
                && transcript.contains("[assistant] Noted!"),
            "{transcript}"
        );

        // The user can trace the memory back to that conversation.
        h.channel
            .dm(1, &format!("/memory trace {}", bullet.id))
            .await;
        let log = h
            .wait_for("the trace", |l| l.any_contains("**Source**"))
            .await;
        let trace = log.find("**Source**").unwrap().text.clone();
        assert!(
            trace.contains("> you: Please always use bullet points"),
            "{trace}"
        );
        // In a group the memory shows, but the DM's words are not quoted there.
        let before = h.channel.log().sent().len();
        h.channel
            .group(
                1,
                -500,
                Addressed::Command,
                &format!("/memory trace {}", bullet.id),
            )
            .await;
        let log = h
            .wait_for("the group trace", |l| l.sent().len() > before)
            .await;
        let in_group = log.sent().last().unwrap().text.clone();
        assert!(
            in_group.contains("bullet points") && in_group.contains("Said in another chat"),
            "{in_group}"
        );
        assert!(!in_group.contains("> you:"), "{in_group}");
        h.stop().await;
    }
}

#[tokio::test]
async fn a_broken_reply_stores_nothing_and_is_not_retried_forever() {
    for db in backends().await {
        let h = harness(&[("MEMORY_IDLE_SECS", "1")], &db).await;
        h.llm.set_responder(|req| {
            if is_extraction(req) {
                Reply::text("Sure! Here are the memories: the user likes tea.")
            } else {
                Reply::text("Okay.")
            }
        });
        h.channel.dm(1, "I like tea.").await;
        h.wait_for("the answer", |l| l.any_contains("Okay.")).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !h.llm.requests().await.iter().any(is_extraction) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no extraction happened"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(h
            .running
            .store
            .memories()
            .of(owner(1), &[], 10, Utc::now())
            .await
            .unwrap()
            .is_empty());
        let attempts = h
            .llm
            .requests()
            .await
            .iter()
            .filter(|r| is_extraction(r))
            .count();
        assert_eq!(attempts, 1, "the watermark moved on");
        h.stop().await;
    }
}

#[tokio::test]
async fn enough_new_atoms_refresh_scenarios_and_persona() {
    for db in backends().await {
        let h = harness(
            &[("MEMORY_IDLE_SECS", "1"), ("MEMORY_LAYER_EVERY", "2")],
            &db,
        )
        .await;
        let book = MemoryBook::new(h.running.store.clone(), MemoryConfig::default());
        let old_persona = NewMemory {
            kind: MemoryKind::Persona,
            content: "A student learning Python".into(),
            source_ref: "test".into(),
            importance: 0.5,
            expires_at: None,
        };
        book.save(owner(1), old_persona, Utc::now()).await.unwrap();
        h.llm.set_responder(|req| {
        if is_extraction(req) {
            Reply::text(&json!({"memories": [
                {"kind": "preference", "content": "The user reviews code with tests first"},
                {"kind": "preference", "content": "The user likes small pull requests"},
                {"kind": "decision", "content": "The user standardized on Rust for services because of safety"}
            ]}).to_string())
        } else if is_layers(req) {
            Reply::text(&json!({
                "scenarios": [{"content": "When reviewing a change, the user wants small PRs with tests first", "importance": 0.8}],
                "persona": [{"content": "A senior backend engineer who writes Rust services"}]
            }).to_string())
        } else {
            Reply::text("Sounds good.")
        }
    });
        h.channel
            .dm(1, "Small PRs, tests first, and Rust for services please.")
            .await;
        let all = memories_until(&h, "the refreshed layers", |m| {
            m.iter().any(|m| m.kind == MemoryKind::Scenario)
        })
        .await;
        let persona: Vec<&str> = all
            .iter()
            .filter(|m| m.kind == MemoryKind::Persona)
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(
            persona,
            ["A senior backend engineer who writes Rust services"],
            "the persona was replaced"
        );
        let scenario = all.iter().find(|m| m.kind == MemoryKind::Scenario).unwrap();
        assert!(
            scenario.source_ref.starts_with("layers:#"),
            "{}",
            scenario.source_ref
        );
        let layers = h.llm.requests().await.into_iter().find(is_layers).unwrap();
        let input = messages(&layers)[1]["content"].as_str().unwrap().to_owned();
        assert!(
            input.contains("tests first") && input.contains("A student learning Python"),
            "{input}"
        );
        h.stop().await;
    }
}

/// An extractor as one gateway process has it: its own store (pool) on the
/// shared database, and the model.
fn extractor(store: &Store, llm: &FakeLlm) -> Extractor {
    let book = MemoryBook::new(store.clone(), MemoryConfig::default());
    Extractor::new(book, provider(llm))
}

/// User 1's session with a short exchange; idle at `now`, as the sweep lists it.
async fn idle_session(store: &Store, now: chrono::DateTime<Utc>) -> IdleSession {
    let key = SessionKey {
        platform: Platform::Console,
        chat: ChatId(1),
        thread: None,
        user: UserId(1),
    };
    let session = store.sessions().open(&key).await.unwrap();
    store
        .history()
        .append(
            &session,
            &[
                Message::user("Please always answer with bullet points."),
                Message::assistant("Noted!"),
            ],
        )
        .await
        .unwrap();
    let mut idle = store.sessions().idle(now, now, 10).await.unwrap();
    assert_eq!(idle.len(), 1, "{idle:?}");
    idle.remove(0)
}

const ONE_ATOM: &str = r#"{"memories": [{"kind": "preference", "content": "The user wants answers as bullet points"}]}"#;

async fn extraction_calls(llm: &FakeLlm) -> usize {
    llm.requests()
        .await
        .iter()
        .filter(|r| is_extraction(r))
        .count()
}

#[tokio::test]
async fn two_processes_extract_an_idle_session_once() {
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let url = db_url(&db, dir.path());
        let (a, b) = (open_store(&url).await, open_store(&url).await);
        let llm = FakeLlm::start().await;
        llm.set_responder(|_| Reply::text(ONE_ATOM));
        let (xa, xb) = (extractor(&a, &llm), extractor(&b, &llm));
        let now = Utc::now() + chrono::Duration::minutes(1);
        // Both sweeps list the session before either extracts it.
        let seen_a = idle_session(&a, now).await;
        let seen_b = b.sessions().idle(now, now, 10).await.unwrap();
        assert_eq!(seen_b, std::slice::from_ref(&seen_a));

        let (ra, rb) = tokio::join!(
            xa.extract_session(&seen_a, now),
            xb.extract_session(&seen_b[0], now)
        );
        let (ra, rb) = (ra.unwrap(), rb.unwrap());
        assert!(
            ra.is_some() != rb.is_some(),
            "exactly one process extracts: {ra:?} {rb:?}"
        );
        assert_eq!(extraction_calls(&llm).await, 1, "the model is asked once");

        // A listing taken before the winner finished is stale afterwards too.
        for (x, idle) in [(&xa, &seen_a), (&xb, &seen_b[0])] {
            assert!(x.extract_session(idle, now).await.unwrap().is_none());
        }
        assert_eq!(extraction_calls(&llm).await, 1);
        let all = a
            .memories()
            .of(owner(1), &[], 10, Utc::now())
            .await
            .unwrap();
        assert_eq!(all.len(), 1, "no near-duplicate memories: {all:#?}");
        assert!(b.sessions().idle(now, now, 10).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_claimant_that_died_holds_the_session_only_until_its_lease_runs_out() {
    for db in backends().await {
        let dir = tempfile::tempdir().unwrap();
        let url = db_url(&db, dir.path());
        let (dead, alive) = (open_store(&url).await, open_store(&url).await);
        let llm = FakeLlm::start().await;
        llm.set_responder(|_| Reply::text(ONE_ATOM));
        let now = Utc::now() + chrono::Duration::minutes(1);
        let idle = idle_session(&dead, now).await;
        // The first process claims the session and dies before extracting.
        assert!(dead
            .sessions()
            .claim_extraction(&idle, now, now + EXTRACTION_LEASE)
            .await
            .unwrap());
        drop(dead);

        let x = extractor(&alive, &llm);
        let soon = now + chrono::Duration::minutes(1);
        assert!(alive
            .sessions()
            .idle(now, soon, 10)
            .await
            .unwrap()
            .is_empty());
        assert!(x.extract_session(&idle, soon).await.unwrap().is_none());
        assert_eq!(extraction_calls(&llm).await, 0, "the lease still holds");

        let expired = now + EXTRACTION_LEASE;
        assert_eq!(
            alive.sessions().idle(now, expired, 10).await.unwrap(),
            std::slice::from_ref(&idle)
        );
        let report = x.extract_session(&idle, expired).await.unwrap();
        assert_eq!(report.map(|r| r.added.len()), Some(1));
        assert_eq!(extraction_calls(&llm).await, 1);
        assert_eq!(
            alive
                .sessions()
                .state(&idle.session)
                .await
                .unwrap()
                .extracted_through,
            idle.last_message
        );
    }
}
