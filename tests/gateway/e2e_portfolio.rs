//! End to end: the portfolio ledger (`portfolio` safe, `update_portfolio` behind
//! an approval card) and the intent guard that makes "show my portfolio" be
//! answered from the tool — corrected at most twice, then answered with a warning.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use support::e2e::{messages, tool_result, Harness};
use support::fake_llm::Reply;
use support::test_channel::Log;

const MARK: &str = "[GATEWAY CHECK - NOT USER INPUT]";

/// Every text the chat ever showed (sends and edits).
fn everything_shown(log: &Log) -> Vec<String> {
    log.sent()
        .iter()
        .flat_map(|m| log.history_of(m.id))
        .collect()
}

fn contents(request: &Value) -> Vec<String> {
    messages(request)
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The `/metrics` line counting intent checks with this outcome, if any.
async fn intent_metric(h: &Harness, outcome: &str) -> Option<String> {
    let addr = h.running.health_addr.expect("HEALTH_LISTEN is set");
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series =
        format!("switchboard_intent_checks_total{{platform=\"console\",outcome=\"{outcome}\"}} ");
    text.lines()
        .find(|l| l.starts_with(&series))
        .map(|l| l[series.len()..].to_owned())
}

#[tokio::test]
async fn an_answer_without_the_tool_is_sent_back_and_never_shown() {
    let h = Harness::with(&[("HEALTH_LISTEN", "127.0.0.1:0")]).await;
    h.llm.push(Reply::text("You hold 100 AAPL and 5 BTC."));
    h.llm.push(Reply::tool_calls([(
        "call_view",
        "portfolio",
        json!({ "action": "view" }),
    )]));
    h.llm.push(Reply::text("Your portfolio is empty for now."));
    h.channel.dm(1, "show my portfolio").await;
    let log = h
        .wait_for("the checked answer", |l| {
            l.has_text("Your portfolio is empty for now.")
        })
        .await;
    h.idle().await;

    let requests = h.requests(3).await;
    let second = contents(&requests[1]);
    assert_eq!(second[second.len() - 2], "You hold 100 AAPL and 5 BTC.");
    assert!(second.last().unwrap().starts_with(MARK), "{second:?}");
    assert!(second.last().unwrap().contains("`portfolio`"));
    assert!(tool_result(&requests[2], "call_view").contains("The portfolio is empty"));
    assert!(
        !everything_shown(&log)
            .iter()
            .any(|t| t.contains("100 AAPL")),
        "the unchecked answer never reached the chat"
    );

    // The saved history has no trace of the refused answer or the correction.
    h.llm.push(Reply::text("ok"));
    h.channel.dm(1, "thanks").await;
    h.wait_for("the second answer", |l| l.has_text("ok")).await;
    let next = contents(&h.requests(4).await[3]);
    assert!(
        !next
            .iter()
            .any(|c| c.starts_with(MARK) || c.contains("100 AAPL")),
        "{next:?}"
    );
    assert!(next.iter().any(|c| c == "Your portfolio is empty for now."));
    assert_eq!(intent_metric(&h, "corrected").await.as_deref(), Some("1"));
    assert_eq!(intent_metric(&h, "unmet").await, None);
}

#[tokio::test]
async fn after_two_corrections_the_answer_carries_a_warning() {
    let h = Harness::with(&[("HEALTH_LISTEN", "127.0.0.1:0")]).await;
    for _ in 0..3 {
        h.llm.push(Reply::text("You hold 100 AAPL."));
    }
    h.channel.dm(1, "看看我的持仓").await;
    let log = h
        .wait_for("the warned answer", |l| l.any_contains("Not checked"))
        .await;
    h.idle().await;
    let answer = log.find("Not checked").unwrap().text.clone();
    assert!(
        answer.starts_with("⚠️ Not checked with `portfolio`"),
        "{answer}"
    );
    assert!(answer.ends_with("You hold 100 AAPL."), "{answer}");
    let requests = h.requests(3).await;
    assert_eq!(h.llm.remaining(), 0, "exactly three model calls");
    assert_eq!(
        contents(&requests[2])
            .iter()
            .filter(|c| c.starts_with(MARK))
            .count(),
        2
    );
    // Nothing but the warned answer was ever shown.
    assert!(
        everything_shown(&log)
            .iter()
            .filter(|t| t.contains("100 AAPL"))
            .all(|t| t.starts_with("⚠️")),
        "{:?}",
        everything_shown(&log)
    );
    assert_eq!(intent_metric(&h, "unmet").await.as_deref(), Some("1"));
}

#[tokio::test]
async fn other_requests_stream_as_usual() {
    let h = Harness::start().await;
    h.llm
        .push(Reply::text("A portfolio is a collection of assets."));
    h.channel.dm(1, "what is a portfolio?").await;
    h.wait_for("the answer", |l| {
        l.has_text("A portfolio is a collection of assets.")
    })
    .await;
    h.idle().await;
    assert_eq!(h.requests(1).await.len(), 1);
}

#[tokio::test]
async fn approved_updates_change_only_the_requesters_ledger() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "call_buy",
        "update_portfolio",
        json!({ "op": "buy", "symbol": "aapl", "quantity": 10, "price": "150.5", "currency": "USD", "note": "first lot" }),
    )]));
    h.llm.push(Reply::text("Recorded."));
    // "my portfolio" matches the portfolio rule; updating it meets the rule.
    h.channel
        .dm(1, "add the 10 AAPL I bought at 150.5 to my portfolio")
        .await;
    let card = h.channel.card().await;
    assert!(
        card.text
            .contains("Buy 10 AAPL at 150.5 USD — note: first lot"),
        "{}",
        card.text
    );
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Recorded.")).await;
    h.idle().await;
    let requests = h.requests(2).await;
    assert!(
        !contents(&requests[1]).iter().any(|c| c.starts_with(MARK)),
        "no correction"
    );
    let result = tool_result(&requests[1], "call_buy");
    assert!(
        result.contains("AAPL is now 10 units, average cost 150.5, cost basis 1505 USD"),
        "{result}"
    );

    // The owner sees it; another user does not.
    for (user, expected) in [(1, "AAPL: 10 units"), (2, "The portfolio is empty")] {
        let call = format!("call_view_{user}");
        h.llm
            .push(Reply::tool_calls([(call.as_str(), "portfolio", json!({}))]));
        let answer = format!("answer for {user}");
        h.llm.push(Reply::text(&answer));
        h.channel.dm(user, "show my portfolio").await;
        h.wait_for("the view", |l| l.has_text(&answer)).await;
        h.idle().await;
        let requests = h.llm.requests().await;
        let view = requests
            .iter()
            .rev()
            .find_map(|r| {
                messages(r)
                    .iter()
                    .any(|m| m["tool_call_id"] == call.as_str())
                    .then(|| tool_result(r, &call))
            })
            .unwrap();
        assert!(view.contains(expected), "user {user}: {view}");
    }

    // A sale larger than the holding is refused at once, before any card.
    let cards = h.channel.log().cards_ever();
    h.llm.push(Reply::tool_calls([(
        "call_sell",
        "update_portfolio",
        json!({ "op": "sell", "symbol": "AAPL", "quantity": "-1", "price": 1 }),
    )]));
    h.llm.push(Reply::text("That did not work."));
    h.channel.dm(1, "sell -1 AAPL").await;
    h.wait_for("the refusal", |l| l.has_text("That did not work."))
        .await;
    h.idle().await;
    assert_eq!(
        h.channel.log().cards_ever(),
        cards,
        "no card for an invalid order"
    );
    let requests = h.llm.requests().await;
    let refused = tool_result(requests.last().unwrap(), "call_sell");
    assert!(refused.contains("quantity must be above 0"), "{refused}");
}

#[tokio::test]
async fn a_check_up_after_portfolio_talk_needs_the_diagnosis_not_a_view() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "c_view",
        "portfolio",
        json!({ "action": "view" }),
    )]));
    h.llm.push(Reply::text("Your portfolio is empty for now."));
    h.channel.dm(1, "show my portfolio").await;
    h.wait_for("the view", |l| {
        l.has_text("Your portfolio is empty for now.")
    })
    .await;

    // "do a check-up" names no portfolio, but follows portfolio talk: a
    // plain view is sent back, the diagnosis is what answers it.
    h.llm.push(Reply::tool_calls([(
        "c_view2",
        "portfolio",
        json!({ "action": "view" }),
    )]));
    h.llm.push(Reply::text("Looks fine to me."));
    h.llm.push(Reply::tool_calls([(
        "c_diag",
        "portfolio",
        json!({ "action": "diagnose" }),
    )]));
    h.llm.push(Reply::text("Nothing to diagnose: no holdings."));
    h.channel.dm(1, "ok, now do a check-up").await;
    let log = h
        .wait_for("the diagnosis", |l| {
            l.has_text("Nothing to diagnose: no holdings.")
        })
        .await;
    let requests = h.requests(6).await;
    let corrected = contents(&requests[4]);
    assert!(
        corrected
            .last()
            .unwrap()
            .contains("`portfolio` (with action \"diagnose\")"),
        "{corrected:?}"
    );
    assert!(tool_result(&requests[5], "c_diag").contains("empty"));
    assert!(!everything_shown(&log)
        .iter()
        .any(|t| t.contains("Looks fine to me.")));
    h.stop().await;
}

#[tokio::test]
async fn a_request_to_change_rules_or_schedules_sees_them_as_they_are_now() {
    let h = Harness::start().await;
    h.running
        .store
        .approvals()
        .add_rule(
            switchboard_platform::Platform::Console,
            switchboard_platform::UserId(1),
            "exec_command",
            "prefix:git status",
        )
        .await
        .unwrap();
    let system = |r: &Value| contents(r)[0].clone();
    // The planner's explicit check names what the request touches.
    h.llm.set_check_responder(|_| {
        Reply::text(r#"{"reads": ["rules"], "changes": ["rules", "schedules"]}"#)
    });
    h.llm.push(Reply::text("Which rule?"));
    h.channel
        .dm(1, "revoke my always-allow rule and cancel the daily report")
        .await;
    h.wait_for("the answer", |l| l.has_text("Which rule?"))
        .await;
    h.llm.push(Reply::text("Hi!"));
    h.channel.dm(1, "hello").await;
    h.wait_for("the second answer", |l| l.has_text("Hi!")).await;
    let requests = h.requests(2).await;
    let first = system(&requests[0]);
    assert!(first.contains("[Live state"), "{first}");
    assert!(
        first.contains("for exec_command: prefix:git status")
            && first.contains("Schedules in this conversation: none."),
        "{first}"
    );
    assert!(
        !first.contains("Portfolio"),
        "only what the request touches"
    );
    assert!(
        !system(&requests[1]).contains("[Live state"),
        "not for a greeting"
    );
    assert_eq!(h.llm.live_checks().len(), 1, "no check for plain chat");
    h.stop().await;
}
