//! A sub-agent that acts (`operations`): its command needs an approval, the
//! card goes to the person whose turn delegated the work, a press by someone
//! else decides nothing, the requester's press lets it run, and its findings
//! come back to the main agent. Without `operations` in `SUBAGENTS` no role
//! is offered an approval-gated tool.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;
use switchboard_platform::PressAnswer;

#[tokio::test]
async fn an_operations_sub_agent_asks_the_requester_and_acts_once_allowed() {
    let h = Harness::with(&[("SUBAGENTS", "research,operations")]).await;
    h.llm.push(Reply::tool_calls([(
        "call_d",
        "delegate_to_operations",
        json!({"task": "Print the word acted with echo."}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "sub_1",
        "exec_command",
        json!({"command": "echo acted"}),
    )]));
    h.llm
        .push(Reply::text("Ran `echo acted`; it printed acted."));
    h.llm
        .push(Reply::text("Done: the operations sub-agent printed acted."));
    h.channel.dm(1, "print acted please").await;
    let card = h.channel.card().await;
    assert!(card.text.contains("echo acted"), "{}", card.text);
    assert!(card.text.contains("for a sub-agent"), "{}", card.text);

    // Someone else's press decides nothing.
    h.channel.press(2, &card.action('y')).await;
    h.wait_for("the refusal", |l| {
        l.answers().iter().any(|(u, _, a)| {
            u.0 == 2
                && matches!(a, PressAnswer::Private(t) if t.contains("Only the person who asked"))
        })
    })
    .await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| {
        l.has_text("Done: the operations sub-agent printed acted.")
    })
    .await;
    let requests = h.requests(4).await;
    assert!(
        tool_result(&requests[2], "sub_1").contains("acted"),
        "the command did not run"
    );
    let findings = tool_result(&requests[3], "call_d");
    assert!(findings.contains("Ran `echo acted`"), "{findings}");
    h.stop().await;
}

#[tokio::test]
async fn a_denied_sub_agent_call_is_reported_and_roles_that_do_not_act_never_ask() {
    let h = Harness::with(&[("SUBAGENTS", "research,operations")]).await;
    h.llm.push(Reply::tool_calls([(
        "call_d",
        "delegate_to_operations",
        json!({"task": "Delete the cache directory."}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "sub_1",
        "exec_command",
        json!({"command": "rm -rf cache"}),
    )]));
    h.llm.push(Reply::text(
        "The user denied `rm -rf cache`; nothing was deleted.",
    ));
    h.llm.push(Reply::text("Nothing was deleted."));
    h.channel.dm(1, "clear the cache").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('n')).await;
    h.wait_for("the answer", |l| l.has_text("Nothing was deleted."))
        .await;
    let requests = h.requests(4).await;
    let refused = tool_result(&requests[2], "sub_1");
    assert!(refused.to_lowercase().contains("denied"), "{refused}");

    // The research role is never offered exec_command.
    let research = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "delegate_to_research")
        .unwrap()["function"]["description"]
        .to_string();
    assert!(!research.contains("exec_command"), "{research}");
    h.stop().await;
}

#[tokio::test]
async fn a_sub_agents_call_can_be_edited_and_asks_again() {
    let h = Harness::with(&[("SUBAGENTS", "research,operations")]).await;
    h.llm.push(Reply::tool_calls([(
        "call_d",
        "delegate_to_operations",
        json!({"task": "Print a word with echo."}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "sub_1",
        "exec_command",
        json!({"command": "echo original"}),
    )]));
    h.llm.push(Reply::text("Ran the edited echo."));
    h.llm
        .push(Reply::text("Done: the sub-agent ran the edited echo."));
    h.channel.dm(1, "print a word").await;
    let first = h.channel.card().await;
    h.channel.press(1, &first.action('e')).await;
    h.wait_for("the edit prompt", |l| !l.answers().is_empty())
        .await;
    h.channel.dm(1, "echo edited").await;
    let second = h.channel.next_card(first.id).await;
    assert!(second.text.contains("echo edited"), "{}", second.text);
    assert!(second.text.contains("for a sub-agent"), "{}", second.text);
    h.channel.press(1, &second.action('y')).await;
    h.wait_for("the answer", |l| {
        l.has_text("Done: the sub-agent ran the edited echo.")
    })
    .await;
    let requests = h.requests(4).await;
    let ran = tool_result(&requests[2], "sub_1");
    assert!(ran.ends_with("output:\nedited\n"), "{ran}");
    h.stop().await;
}
