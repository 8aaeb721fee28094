//! Live reload of `SUBAGENTS_FILE`, end to end: a role added to the file
//! while the gateway runs is a `delegate_to_<role>` tool the model can call
//! in the next turn; a removed one is no longer offered; a broken file is
//! refused and the roles in force stay.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::{messages, tool_names, Harness};
use crate::support::fake_llm::{last_user_text, Reply};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use switchboard::loaded::{Loaded, SourceStatus};

const KEEPER: &str = "You keep the user's notes.";
const WRITER: &str = "You write short drafts.";

fn save(path: &Path, text: &str) {
    let partial = path.with_extension("swp");
    std::fs::write(&partial, text).unwrap();
    std::fs::rename(&partial, path).unwrap();
}

fn role(name: &str, prompt: &str) -> Value {
    json!({"name": name, "description": format!("The {name}."), "system_prompt": prompt, "tools": []})
}

fn system(request: &Value) -> String {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn is_sub(request: &Value) -> bool {
    let s = system(request);
    s.starts_with(KEEPER) || s.starts_with(WRITER)
}

/// `role: task` is delegated to that role; a sub-agent says what it was asked.
fn respond(request: &Value) -> Reply {
    let task = last_user_text(request).unwrap_or_default();
    if is_sub(request) {
        return Reply::text(&format!("Sub-agent did: {task}"));
    }
    let all = messages(request);
    if all.last().is_some_and(|m| m["role"] == "tool") {
        return Reply::text(&format!("Delegated {}.", all.len()));
    }
    match task.split_once(": ") {
        Some((role, brief)) => Reply::tool_calls([(
            format!("call_{}", all.len()),
            format!("delegate_to_{role}"),
            json!({ "task": brief }),
        )]),
        None => Reply::text(&format!("Plain answer {}.", all.len())),
    }
}

async fn until(loaded: &Loaded, done: impl Fn(&SourceStatus) -> bool) -> SourceStatus {
    let mut updates = loaded.subscribe();
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(s) = loaded.source("SUBAGENTS_FILE").filter(|s| done(s)) {
                return s;
            }
            updates.changed().await.unwrap();
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("no reload: {:?}", loaded.snapshot()))
}

/// One message; the tools offered to the main agent in its last request.
async fn turn(h: &Harness, text: &str) -> Vec<String> {
    let before = h.llm.requests().await.len();
    let answers = |l: &crate::support::test_channel::Log| {
        l.count_containing("Delegated") + l.count_containing("Plain answer")
    };
    let seen = answers(&h.channel.log());
    h.channel.dm(1, text).await;
    h.wait_for("the answer", |l| answers(l) > seen).await;
    h.idle().await;
    let requests = h.llm.requests().await;
    let main = requests[before..].iter().rfind(|r| !is_sub(r));
    tool_names(main.expect("a request of the main agent"))
}

#[tokio::test]
async fn a_role_added_to_the_file_is_callable_next_turn_and_a_removed_one_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("roles.json");
    std::fs::write(
        &file,
        json!({"roles": [role("keeper", KEEPER)]}).to_string(),
    )
    .unwrap();
    let h = Harness::with(&[("SUBAGENTS_FILE", file.to_str().unwrap())]).await;
    h.llm.set_responder(respond);
    let loaded = h.running.loaded();
    let first = loaded.source("SUBAGENTS_FILE").unwrap();

    let tools = turn(&h, "hello").await;
    assert!(
        tools.contains(&"delegate_to_keeper".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"delegate_to_writer".to_owned()),
        "{tools:?}"
    );

    // The writer added, the keeper removed: in force for the next message.
    save(
        &file,
        &json!({"roles": [role("writer", WRITER)]}).to_string(),
    );
    until(loaded, |s| s.loaded_at > first.loaded_at).await;
    let tools = turn(&h, "writer: draft a thank-you note").await;
    assert!(
        tools.contains(&"delegate_to_writer".to_owned()),
        "{tools:?}"
    );
    assert!(
        tools.contains(&"delegate_to_research".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"delegate_to_keeper".to_owned()),
        "{tools:?}"
    );
    let asked: Vec<String> = h
        .llm
        .requests()
        .await
        .iter()
        .filter(|r| system(r).starts_with(WRITER))
        .map(|r| last_user_text(r).unwrap())
        .collect();
    assert_eq!(asked, ["draft a thank-you note"], "the writer ran");

    // Broken: refused, and the writer stays offered.
    save(&file, "{\"roles\": [\n  {\"name\": }\n]}");
    let refused = until(loaded, |s| s.refused.is_some()).await;
    let message = refused.refused.unwrap().message;
    assert!(message.starts_with("SUBAGENTS_FILE ("), "{message}");
    assert!(message.contains("line 2"), "{message}");
    let tools = turn(&h, "still there?").await;
    assert!(
        tools.contains(&"delegate_to_writer".to_owned()),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"delegate_to_keeper".to_owned()),
        "{tools:?}"
    );
    h.stop().await;
}
