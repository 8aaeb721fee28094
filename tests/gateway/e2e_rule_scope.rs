//! What an "always" prefix rule covers, end to end (issue 38): a foreground
//! rule does not approve the same command run in the background, and a
//! command whose blanks `sh` does not split on never rides on a rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::e2e::Harness;
use crate::support::fake_llm::Reply;
use serde_json::json;

#[tokio::test]
async fn a_foreground_rule_neither_covers_a_background_run_nor_exotic_blanks() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_one",
        "exec_command",
        json!({ "command": "ls -la" }),
    )]));
    h.llm.push(Reply::text("Listed."));
    h.channel.dm(1, "list it").await;
    let card = h.channel.card().await;
    let short = card.approval_id().short().to_owned();
    h.channel
        .dm(1, &format!("/approve {short} always ls"))
        .await;
    h.wait_for("the rule and the answer", |l| {
        l.any_contains("commands starting with `ls`") && l.has_text("Listed.")
    })
    .await;
    h.idle().await;

    // The same command as a background task (an hour's timeout) asks.
    h.llm.push(Reply::tool_calls([(
        "call_bg",
        "exec_command",
        json!({ "command": "ls -la", "background": true }),
    )]));
    h.llm.push(Reply::text("Not in the background then."));
    h.channel.dm(1, "again, in the background").await;
    let bg = h.channel.next_card(card.id).await;
    assert_ne!(bg.approval_id(), card.approval_id());
    h.channel.press(1, &bg.action('n')).await;
    h.wait_for("the denied turn's answer", |l| {
        l.has_text("Not in the background then.")
    })
    .await;
    h.idle().await;

    // A no-break space makes `ls\u{a0}/../…` one word to `sh`: it asks too.
    h.llm.push(Reply::tool_calls([(
        "call_nbsp",
        "exec_command",
        json!({ "command": "ls\u{a0}/../../usr/bin/touch pwned.txt" }),
    )]));
    h.channel.dm(1, "and this").await;
    h.wait_for("a card for the disguised command", |l| l.cards_ever() == 3)
        .await;
    assert!(!h.workspace().join("pwned.txt").exists());
    h.stop().await;
}
