//! A sub-agent role with its own memory (`"memory": true` in
//! `SUBAGENTS_FILE`): what it found for a user is shown to it the next time
//! that user's turn delegates to it — never to another role, nor for another
//! user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use support::e2e::{messages, Harness};
use support::fake_llm::{last_user_text, Reply};

const KEEPER: &str = "You keep the user's budget notes.";
const PLAIN: &str = "You answer budget questions.";
const NOTES: &str = "Your own notes from earlier tasks for this user";

fn system(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The main agent delegates `role: task` messages; each sub-agent reports
/// what it was asked.
fn respond(request: &Value) -> Reply {
    let sys = system(request);
    let task = last_user_text(request).unwrap_or_default();
    if sys.starts_with(KEEPER) {
        return Reply::text(&format!("Keeper noted: {task}"));
    }
    if sys.starts_with(PLAIN) {
        return Reply::text(&format!("Plain answer to: {task}"));
    }
    let all = messages(request);
    if all.last().is_some_and(|m| m["role"] == "tool") {
        return Reply::text("Delegated.");
    }
    match task.split_once(": ") {
        Some((role, brief)) if role == "keeper" || role == "plain" => Reply::tool_calls([(
            format!("call_{}", all.len()),
            format!("delegate_to_{role}"),
            json!({ "task": brief }),
        )]),
        _ => Reply::text("{}"),
    }
}

#[tokio::test]
async fn a_role_with_memory_sees_its_own_notes_for_that_user_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("roles.json");
    let roles = json!({"roles": [
        {"name": "keeper", "description": "Keeps budget notes.", "system_prompt": KEEPER, "tools": [], "memory": true},
        {"name": "plain", "description": "Answers budget questions.", "system_prompt": PLAIN, "tools": []}
    ]});
    std::fs::write(&file, roles.to_string()).unwrap();
    let h = Harness::with(&[("SUBAGENTS_FILE", file.to_str().unwrap())]).await;
    h.llm.set_responder(respond);

    for (user, text) in [
        (1, "keeper: the budget is 4,500 EUR"),
        (1, "keeper: what was the budget?"),
        (2, "keeper: what was the budget?"),
        (1, "plain: what was the budget?"),
        (1, "plain: and now?"),
    ] {
        let before = h.channel.log().count_containing("Delegated.");
        h.channel.dm(user, text).await;
        h.wait_for("the answer", |l| l.count_containing("Delegated.") > before)
            .await;
        h.idle().await;
    }
    let subs: Vec<(String, String)> = h
        .llm
        .requests()
        .await
        .iter()
        .filter(|r| {
            let s = system(r);
            s.starts_with(KEEPER) || s.starts_with(PLAIN)
        })
        .map(|r| (system(r), last_user_text(r).unwrap()))
        .collect();
    assert_eq!(subs.len(), 5, "{subs:#?}");
    let (first, second, other_user, plain, plain_again) =
        (&subs[0].0, &subs[1].0, &subs[2].0, &subs[3].0, &subs[4].0);
    assert!(!first.contains(NOTES), "no notes yet: {first}");
    assert!(second.contains(NOTES), "{second}");
    assert!(
        second.contains(
            "task: the budget is 4,500 EUR → findings: Keeper noted: the budget is 4,500 EUR"
        ),
        "{second}"
    );
    assert!(
        !other_user.contains(NOTES),
        "another user's notes: {other_user}"
    );
    assert!(
        !plain.contains(NOTES) && !plain.contains("4,500"),
        "{plain}"
    );
    assert!(
        !plain_again.contains(NOTES),
        "a role without memory keeps none"
    );

    // Stored per user and role.
    let owner = |u: i64| {
        switchboard::store::MemoryOwner::new(
            switchboard_platform::Platform::Console,
            switchboard_platform::UserId(u),
        )
    };
    let notes = h.running.store.role_notes();
    assert_eq!(notes.recent(owner(1), "keeper", 10).await.unwrap().len(), 2);
    assert_eq!(notes.recent(owner(2), "keeper", 10).await.unwrap().len(), 1);
    assert!(notes
        .recent(owner(1), "plain", 10)
        .await
        .unwrap()
        .is_empty());
    h.stop().await;
}

#[tokio::test]
async fn role_notes_are_kept_on_postgres_too() {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL not set: skipped");
        return;
    };
    let url = support::postgres::fresh_postgres(&admin).await;
    let store = switchboard::store::Store::open(&url).await.unwrap();
    let owner = switchboard::store::MemoryOwner::new(
        switchboard_platform::Platform::Telegram,
        switchboard_platform::UserId(5_000_000_000),
    );
    let limit = switchboard::store::ROLE_NOTES_KEPT;
    for n in 0..limit + 2 {
        let note = switchboard::store::RoleNote {
            task: format!("task {n}"),
            findings: format!("found {n}"),
            at: chrono::Utc::now(),
        };
        store
            .role_notes()
            .add(owner, "keeper", &note)
            .await
            .unwrap();
    }
    let notes = store
        .role_notes()
        .recent(owner, "keeper", 100)
        .await
        .unwrap();
    assert_eq!(notes.len() as i64, limit);
    assert_eq!(notes[0].task, "task 2");
    assert_eq!(
        notes.last().unwrap().findings,
        format!("found {}", limit + 1)
    );
}
