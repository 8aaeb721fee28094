//! End to end through the test channel: an Edit the platform can no longer
//! answer with a form (its deadline passed) falls back to the typed edit,
//! and a typed edit whose arguments fail the tool's schema or checks is
//! refused with the reason and the card asked again with the old ones —
//! the checks a Discord form's arguments pass too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;
use support::test_channel::{Card, TestChannel};
use switchboard_platform::PressAnswer;

/// Scripts an `exec_command` call, asks for it in user 1's DM and returns the card.
async fn exec_card(h: &Harness, command: &str, then: &str) -> Card {
    h.llm.push(Reply::tool_calls([(
        "call_exec",
        "exec_command",
        json!({ "command": command }),
    )]));
    h.llm.push(Reply::text(then));
    h.channel.dm(1, "please run it").await;
    h.channel.card().await
}

#[tokio::test]
async fn an_edit_too_late_for_a_form_waits_for_the_next_message() {
    let h = Harness::with_channel(&[], TestChannel::with_forms_too_late()).await;
    let first = exec_card(&h, "echo original", "Ran the edited command.").await;
    h.channel.press(1, &first.action('e')).await;
    let log = h
        .wait_for("the edit prompt", |l| !l.answers().is_empty())
        .await;
    let answers = log.answers();
    assert_eq!(answers.len(), 1, "one answer to the press: {log}");
    assert!(
        matches!(&answers[0].2, PressAnswer::Update(m) if m.text.contains("send the new arguments as your next message")),
        "{log}"
    );
    h.channel.dm(1, "echo edited").await;
    let second = h.channel.next_card(first.id).await;
    assert!(second.text.contains("echo edited"), "{}", second.text);
    h.channel.press(1, &second.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Ran the edited command."))
        .await;
    let result = tool_result(&h.requests(2).await[1], "call_exec");
    assert!(result.ends_with("output:\nedited\n"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn a_typed_edit_failing_the_tools_checks_asks_again_with_the_old_arguments() {
    let h = Harness::start().await;
    let first = exec_card(&h, "echo original", "Ran the original.").await;
    h.channel.press(1, &first.action('e')).await;
    h.wait_for("the edit prompt", |l| !l.answers().is_empty())
        .await;
    h.channel
        .dm(1, r#"{"command": "echo edited", "timeout_secs": "soon"}"#)
        .await;
    let notice = h
        .wait_for("the refusal", |l| {
            l.any_contains("I couldn't use those arguments")
        })
        .await
        .find("I couldn't use those arguments")
        .unwrap()
        .text
        .clone();
    assert!(
        notice.contains("`timeout_secs` must be an integer")
            && notice.contains("The card is open again"),
        "{notice}"
    );
    let second = h.channel.next_card(first.id).await;
    assert!(second.text.contains("echo original"), "{}", second.text);
    assert!(!second.text.contains("echo edited"), "{}", second.text);
    h.channel.press(1, &second.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Ran the original."))
        .await;
    h.stop().await;
}
