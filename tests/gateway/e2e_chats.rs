//! Per-chat settings (`CHATS_FILE`), end to end: two topics of one group
//! bound to different models and tool sets — each honoured, a denied tool
//! neither offered nor run there — free response in a bound group, the
//! chat's instructions in the system prompt, and `/settings` for approvers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;
use crate::support::e2e::tool_names;

use serde_json::json;
use support::e2e::{tool_result, Harness};
use support::fake_llm::{FakeLlm, Reply};
use support::test_channel::user;
use switchboard::store::{ModelRow, Prices};
use switchboard_platform::{Addressed, ChatAddress, ChatId, ChatKind, Platform, ThreadId};

const GROUP: i64 = -500;

fn topic(thread: i64) -> ChatAddress {
    ChatAddress::new(Platform::Console, ChatId(GROUP), Some(ThreadId(thread)))
}

#[tokio::test]
async fn topics_bound_to_different_models_and_tools_are_each_honoured() {
    let coder = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chats.json");
    std::fs::write(
        &file,
        json!({"chats": {
            format!("console:{GROUP}"): {"tools": {"deny": ["exec_command"]}, "free_response": true},
            format!("console:{GROUP}/7"): {"model": "coder", "system_prompt": "You are the coding channel's assistant.",
                                           "tools": {"allow": ["read_file", "exec_command"]}},
        }})
        .to_string(),
    )
    .unwrap();
    let file = file.display().to_string();
    let h = Harness::with(&[("CHATS_FILE", file.as_str())]).await;
    h.running
        .store
        .put_model(&ModelRow {
            name: "coder".into(),
            api: "openai".into(),
            base_url: coder.base_url(),
            key_env: None,
            url_env: None,
            context_window: Some(32_000),
            prices: Prices::default(),
            vision: false,
            tools: true,
            reasoning: false,
            role: None,
            rank: 0,
            seeded: false,
        })
        .await
        .unwrap();

    // Topic 7: the coding model, only its two tools, and its instructions.
    coder.push(Reply::text("Coder here."));
    h.channel
        .message(
            user(1),
            topic(7),
            ChatKind::Group,
            Addressed::Mention,
            "hello coder",
        )
        .await;
    h.wait_for("the coder's answer", |l| l.has_text("Coder here."))
        .await;
    let sent = coder.requests().await;
    let mut offered = tool_names(&sent[0]);
    offered.sort();
    assert_eq!(offered, ["exec_command", "read_file"]);
    assert!(
        sent[0]
            .to_string()
            .contains("You are the coding channel's assistant."),
        "the chat's instructions are not in the system prompt"
    );
    assert!(
        h.llm.requests().await.is_empty(),
        "topic 7 went to the default model"
    );

    // Topic 9 (the group's entry): the default model, without exec_command,
    // and free response: no mention needed.
    h.llm.push(Reply::tool_calls([(
        "call_x",
        "exec_command",
        json!({"command": "id"}),
    )]));
    h.llm.push(Reply::text("I cannot run commands here."));
    h.channel
        .message(
            user(1),
            topic(9),
            ChatKind::Group,
            Addressed::NotAddressed,
            "run id please",
        )
        .await;
    h.wait_for("the group's answer", |l| {
        l.has_text("I cannot run commands here.")
    })
    .await;
    let requests = h.requests(2).await;
    let offered = tool_names(&requests[0]);
    assert!(!offered.contains(&"exec_command".to_owned()), "{offered:?}");
    assert!(offered.contains(&"read_file".to_owned()), "{offered:?}");
    let refused = tool_result(&requests[1], "call_x");
    assert!(refused.contains("unknown tool `exec_command`"), "{refused}");
    assert_eq!(
        h.channel.log().cards_ever(),
        0,
        "a denied tool asked for approval"
    );

    // An unbound group still needs a mention.
    h.channel
        .message(
            user(1),
            ChatAddress::new(Platform::Console, ChatId(-600), None),
            ChatKind::Group,
            Addressed::NotAddressed,
            "chatter",
        )
        .await;
    // `/settings`: not for a non-approver in a group; in their DM, the defaults.
    h.channel
        .message(
            user(1),
            topic(7),
            ChatKind::Group,
            Addressed::Mention,
            "/settings",
        )
        .await;
    h.wait_for("the refusal", |l| {
        l.any_contains("Only an approver can see this chat's settings")
    })
    .await;
    h.channel.dm(1, "/settings").await;
    h.wait_for("the defaults", |l| {
        l.any_contains("This chat uses the operator's defaults")
    })
    .await;
    h.idle().await;
    assert_eq!(
        h.llm.requests().await.len(),
        2,
        "unaddressed chatter in an unbound group ran a turn"
    );
    h.stop().await;
}
