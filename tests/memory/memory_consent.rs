//! Consent carries: the user's explicit yes to the agent's `ask_user`
//! question is quoted on the approval card of the call it led to; the card is
//! still required, and a "no" carries nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::memory_common::{backends, harness};
use crate::support::fake_llm::Reply;

use serde_json::json;

#[tokio::test]
async fn a_yes_to_the_question_is_shown_on_the_card_which_is_still_required() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        h.llm.push(Reply::tool_calls([(
            "q1",
            "ask_user",
            json!({ "question": "Shall I delete the build directory?" }),
        )]));
        h.channel.dm(1, "clean up the workspace").await;
        h.wait_for("the question", |l| {
            l.any_contains("Shall I delete the build directory?")
        })
        .await;

        h.llm.push(Reply::tool_calls([(
            "c1",
            "exec_command",
            json!({ "command": "rm -rf build" }),
        )]));
        h.llm.push(Reply::text("Deleted."));
        h.channel.dm(1, "yes, go ahead").await;
        let card = h.channel.card().await;
        assert!(card.text.contains("Approval needed"), "{}", card.text);
        assert!(
            card.text.contains(
                "you agreed: “yes, go ahead” (asked: Shall I delete the build directory?)"
            ),
            "{}",
            card.text
        );
        h.stop().await;
    }
}

#[tokio::test]
async fn without_a_yes_the_card_carries_no_consent() {
    for db in backends().await {
        let h = harness(&[("MEMORY_LEARN", "off")], &db).await;
        h.llm.push(Reply::tool_calls([(
            "q1",
            "ask_user",
            json!({ "question": "Which directory?" }),
        )]));
        h.channel.dm(1, "clean up the workspace").await;
        h.wait_for("the question", |l| l.any_contains("Which directory?"))
            .await;
        h.llm.push(Reply::tool_calls([(
            "c1",
            "exec_command",
            json!({ "command": "rm -rf dist" }),
        )]));
        h.llm.push(Reply::text("Deleted."));
        h.channel.dm(1, "the dist one").await;
        let card = h.channel.card().await;
        assert!(card.text.contains("Approval needed"), "{}", card.text);
        assert!(!card.text.contains("you agreed"), "{}", card.text);
        h.stop().await;
    }
}
