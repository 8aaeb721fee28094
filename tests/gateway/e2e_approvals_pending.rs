//! End to end: `/approvals` lists the cards still waiting in this chat, with
//! the rules; a decided card and another chat's card are not listed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::e2e::Harness;
use support::fake_llm::Reply;

#[tokio::test]
async fn approvals_lists_the_cards_waiting_in_this_chat_until_decided() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_1",
        "exec_command",
        json!({ "command": "echo `waiting` here" }),
    )]));
    h.llm.push(Reply::text("Not run."));
    h.channel.dm(1, "run it").await;
    let card = h.channel.card().await;
    let id = card.approval_id();
    let short = id.short();

    h.channel.dm(1, "/approvals").await;
    let log = h
        .wait_for("the listing with the pending card", |l| {
            l.any_contains("Waiting for a decision")
        })
        .await;
    let listing = log
        .texts_in(1)
        .into_iter()
        .find(|t| t.contains("Waiting for a decision"))
        .unwrap();
    let line = listing
        .lines()
        .find(|l| l.contains(short))
        .unwrap_or_else(|| panic!("no line for {short}\n{listing}"));
    assert!(line.contains("exec_command"), "{line}");
    assert!(
        line.contains("echo ʼwaitingʼ here"),
        "the action, its backticks unable to close the code span: {line}"
    );
    assert!(
        listing.contains("You have no \"always allow\" rules."),
        "{listing}"
    );

    // Another chat has no card waiting.
    h.channel.dm(2, "/approvals").await;
    let log = h
        .wait_for("user 2's listing", |l| !l.texts_in(2).is_empty())
        .await;
    let other = log.texts_in(2).join("\n");
    assert!(
        !other.contains("Waiting") && !other.contains(short),
        "{other}"
    );

    // Decided: no longer listed.
    h.channel.press(1, &card.action('n')).await;
    h.wait_for("the turn's end", |l| l.has_text("Not run."))
        .await;
    h.channel.dm(1, "/approvals").await;
    let log = h
        .wait_for("the second listing", |l| {
            l.texts_in(1)
                .iter()
                .filter(|t| t.contains("\"always allow\" rules"))
                .count()
                == 2
        })
        .await;
    let last = log
        .texts_in(1)
        .into_iter()
        .rev()
        .find(|t| t.contains("\"always allow\" rules"))
        .unwrap();
    assert!(!last.contains("Waiting") && !last.contains(short), "{last}");
    h.stop().await;
}
