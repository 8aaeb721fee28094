//! Live reload of `CHATS_FILE`, end to end: a rewritten file (saved the way
//! editors do, a new file renamed over the old) is in force for the next
//! message; a broken one is refused with its line and column, the rule in
//! force stays, and the refusal shows in the web console and in
//! `switchboard doctor`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::Harness;
use crate::support::fake_llm::Reply;
use crate::web_client::{WebClient, TOKEN};
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use switchboard::loaded::{Loaded, SourceStatus};

/// Replaces `path` with `text` as an editor saves: written beside it, renamed over it.
fn save(path: &Path, text: &str) {
    let partial = path.with_extension("swp");
    std::fs::write(&partial, text).unwrap();
    std::fs::rename(&partial, path).unwrap();
}

fn rule(text: &str) -> String {
    json!({"chats": {"console:1": {"system_prompt": text}}}).to_string()
}

/// Waits until `CHATS_FILE`'s status satisfies `done` (a reload happened).
async fn until(loaded: &Loaded, done: impl Fn(&SourceStatus) -> bool) -> SourceStatus {
    let mut updates = loaded.subscribe();
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(s) = loaded.source("CHATS_FILE").filter(|s| done(s)) {
                return s;
            }
            updates.changed().await.unwrap();
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("no reload: {:?}", loaded.snapshot()))
}

/// One turn in the bound chat; the system prompt the model was sent.
async fn turn(h: &Harness, n: usize, answer: &str) -> String {
    h.llm.push(Reply::text(answer));
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.has_text(answer)).await;
    h.requests(n).await[n - 1].to_string()
}

#[tokio::test]
async fn a_rewritten_chats_file_rules_the_next_message_and_a_broken_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chats.json");
    std::fs::write(&file, rule("Answer as the first rule says.")).unwrap();
    let path = file.display().to_string();
    let h = Harness::with(&[
        ("CHATS_FILE", path.as_str()),
        ("WEB_LISTEN", "127.0.0.1:0"),
        ("WEB_TOKEN", TOKEN),
    ])
    .await;
    let loaded = h.running.loaded();
    let first = loaded.source("CHATS_FILE").unwrap();
    assert_eq!(first.items, "1 chat(s)");
    let sent = turn(&h, 1, "First.").await;
    assert!(sent.contains("the first rule says"), "{sent}");

    save(&file, &rule("Answer as the second rule says."));
    until(loaded, |s| s.loaded_at > first.loaded_at).await;
    let sent = turn(&h, 2, "Second.").await;
    assert!(sent.contains("the second rule says"), "{sent}");
    assert!(!sent.contains("the first rule says"), "{sent}");

    // Broken: refused with where, and the second rule stays in force.
    save(
        &file,
        "{\"chats\": {\n  \"console:1\": {\"system_prompt\": }\n}}",
    );
    let refused = until(loaded, |s| s.refused.is_some()).await;
    let message = refused.refused.unwrap().message;
    assert!(message.starts_with("CHATS_FILE ("), "{message}");
    assert!(message.contains("chats.json"), "{message}");
    assert!(message.contains("line 2, column"), "{message}");
    let sent = turn(&h, 3, "Still second.").await;
    assert!(sent.contains("the second rule says"), "{sent}");

    // An unusable entry is refused too, by its line.
    save(&file, "{\"chats\": {\n\n  \"nowhere:1\": {}\n}}");
    until(loaded, |s| {
        s.refused
            .as_ref()
            .is_some_and(|r| r.message.contains("line 3: entry nowhere:1"))
    })
    .await;
    let sent = turn(&h, 4, "Second again.").await;
    assert!(sent.contains("the second rule says"), "{sent}");

    // The console shows what is loaded and the refusal.
    let mut c = WebClient::signed_in(h.running.web_addr.unwrap()).await;
    let overview = c.get("/").await.body;
    assert!(overview.contains("Loaded settings"), "{overview}");
    assert!(overview.contains("1 chat(s)"), "{overview}");
    assert!(overview.contains("line 3: entry nowhere:1"), "{overview}");

    // And so does `switchboard doctor` for this DATA_DIR.
    let doctor = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("doctor")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LLM_BASE_URL", "http://127.0.0.1:9/v1")
        .env("LLM_MODEL", "fake-model")
        .env("DATA_DIR", h.data_dir())
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&doctor.stdout);
    assert!(out.contains("live settings of the gateway"), "{out}");
    assert!(
        out.contains("CHATS_FILE") && out.contains("1 chat(s)"),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with('✘')
            && l.contains("CHATS_FILE refused at")
            && l.contains("nowhere:1")),
        "{out}"
    );
    h.stop().await;
}
