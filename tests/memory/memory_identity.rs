//! The agent identity in a turn: the profile the operator set is in the
//! system prompt once, an edit applies to the next message, and `/identity`
//! shows it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common::{backends, harness};
use crate::support::e2e::messages;
use crate::support::fake_llm::Reply;

use chrono::Utc;
use switchboard::identity::{Identity, ProfileEdit};

#[tokio::test]
async fn the_identity_is_in_the_system_prompt_once_and_follows_edits() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        let identity = Identity::new(h.running.store.clone());
        let edit = ProfileEdit {
            name: Some("Ada".into()),
            persona: Some("A calm research assistant.".into()),
            style: Some(vec!["Answer in at most three sentences".into()]),
        };
        identity.edit(&edit, Utc::now()).await.unwrap();
        h.llm.push(Reply::text("Hello!"));
        h.channel.dm(1, "Who are you?").await;
        h.wait_for("the answer", |l| l.any_contains("Hello!")).await;
        let requests = h.llm.requests().await;
        let system = messages(&requests[0])[0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(system.matches("[Agent identity").count(), 1, "{system}");
        assert!(
            system.contains("Your name is Ada.")
                && system.contains("- Answer in at most three sentences"),
            "{system}"
        );

        let rename = ProfileEdit {
            name: Some("Bea".into()),
            ..ProfileEdit::default()
        };
        identity.edit(&rename, Utc::now()).await.unwrap();
        h.llm.push(Reply::text("Hi again!"));
        h.channel.dm(1, "And now?").await;
        h.wait_for("the second answer", |l| l.any_contains("Hi again!"))
            .await;
        let requests = h.llm.requests().await;
        let system = messages(&requests[1])[0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            system.contains("Your name is Bea.") && !system.contains("Ada"),
            "{system}"
        );

        h.channel.dm(1, "/identity").await;
        let log = h
            .wait_for("the identity", |l| l.any_contains("**Identity**"))
            .await;
        let shown = log.find("**Identity**").unwrap().text.clone();
        assert!(
            shown.contains("version 2") && shown.contains("name: Bea"),
            "{shown}"
        );
        h.stop().await;
    }
}

#[tokio::test]
async fn a_user_sets_how_the_agent_presents_itself_in_their_direct_messages() {
    use switchboard_platform::Addressed;
    for db in backends().await {
        // Off by default: the operator's alone.
        let off = harness(&[("MEMORY_LEARN", "off")], &db).await;
        off.channel.dm(1, "/identity name Jarvis").await;
        off.wait_for("the refusal", |l| {
            l.any_contains("IDENTITY_USER_EDITS is off")
        })
        .await;
        off.stop().await;

        let h = harness(
            &[("MEMORY_LEARN", "off"), ("IDENTITY_USER_EDITS", "on")],
            &db,
        )
        .await;
        Identity::new(h.running.store.clone())
            .edit(
                &ProfileEdit {
                    name: Some("Ada".into()),
                    ..ProfileEdit::default()
                },
                Utc::now(),
            )
            .await
            .unwrap();
        h.channel.dm(1, "/identity name Jarvis").await;
        h.wait_for("the name", |l| l.any_contains("name: Jarvis"))
            .await;
        h.channel
            .dm(1, "/identity style add Answer in one sentence")
            .await;
        h.wait_for("the rule", |l| {
            l.any_contains("style: Answer in one sentence")
        })
        .await;
        h.channel
            .group(1, -700, Addressed::Command, "/identity name Bob")
            .await;
        h.wait_for("the group refusal", |l| {
            l.any_contains("send them to me there")
        })
        .await;
        h.channel
            .dm(1, "/identity persona my password is hunter2")
            .await;
        h.wait_for("the secret refusal", |l| l.any_contains("Not changed"))
            .await;

        let system = |r: &serde_json::Value| messages(r)[0]["content"].as_str().unwrap().to_owned();
        h.llm.push(Reply::text("At your service."));
        h.channel.dm(1, "Who are you?").await;
        h.wait_for("user 1's answer", |l| l.any_contains("At your service."))
            .await;
        h.llm.push(Reply::text("Hello, I am Ada."));
        h.channel.dm(2, "Who are you?").await;
        h.wait_for("user 2's answer", |l| l.any_contains("Hello, I am Ada."))
            .await;
        let requests = h.llm.requests().await;
        let mine = system(&requests[0]);
        assert!(
            mine.contains("Your name is Ada.")
                && mine.contains("To this user your name is Jarvis.")
                && mine.contains("- Answer in one sentence")
                && !mine.contains("hunter2"),
            "{mine}"
        );
        assert!(
            mine.find("[Agent identity") < mine.find("[This user's own settings"),
            "the operator's profile comes first: {mine}"
        );
        assert!(!system(&requests[1]).contains("Jarvis"), "only user 1's");

        let events = h.running.store.audit().recent(50).await.unwrap();
        let changes: Vec<&str> = events
            .iter()
            .filter(|e| e.kind == "identity.user_edit")
            .filter_map(|e| e.detail["change"].as_str())
            .collect();
        assert_eq!(changes, ["style add", "name"], "audited, newest first");

        h.channel.dm(1, "/identity reset").await;
        h.wait_for("the reset", |l| l.any_contains("settings are cleared"))
            .await;
        h.llm.push(Reply::text("Ada here."));
        h.channel.dm(1, "And now?").await;
        h.wait_for("the third answer", |l| l.any_contains("Ada here."))
            .await;
        let requests = h.llm.requests().await;
        assert!(!system(&requests[2]).contains("Jarvis"));
        h.stop().await;
    }
}
