//! `switchboard mcp` offering the agent's own tools by tier
//! (`MCP_SERVER_TOOLS`) as one user (`MCP_SERVER_USER`), driven by the
//! official Python SDK client against a running gateway on the fake
//! Telegram Bot API: each tier lists its tools and refuses the others', the
//! calls read and write that user's memory and ledger, an act-tier call that
//! needs approval is refused without a chat to ask in, and one is approved
//! on its card (no Edit) in the chat, every call and refusal audited.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::mcp_serve::{button, gateway, vars, wait_for, Client, GROUP, WAIT};
use crate::support;

use serde_json::{json, Value};
use support::fake_llm::FakeLlm;
use support::fake_telegram::{FakeTelegram, FakeUser, Where};

fn names(hello: &Value) -> Vec<String> {
    hello["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

fn text(result: &Value) -> String {
    result["text"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn other_agents_use_the_agents_own_tools_by_tier_for_the_configured_user() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut vars = vars(&llm, &tg, dir.path());
    // PostgreSQL too, when the run names one.
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        vars.insert(
            "DATABASE_URL",
            support::postgres::fresh_postgres(&admin).await,
        );
    }
    let ann = FakeUser::new(900, "Ann");
    tg.ensure_chat(Where::Group(GROUP), &ann);
    let as_ann = ("MCP_SERVER_USER", "telegram:900");

    // read (the default): the read-only tools, nothing that writes.
    let mut read = Client::start_with(&vars, dir.path(), &[as_ann]);
    let listed = names(&read.next().await);
    for tool in [
        "notify",
        "recall",
        "portfolio",
        "check_background_tasks",
        "query_my_chat_history",
    ] {
        assert!(
            listed.iter().any(|n| n == tool),
            "{tool} missing: {listed:?}"
        );
    }
    for tool in [
        "remember",
        "forget",
        "update_portfolio",
        "exec_command",
        "ask_user",
        "http_tool",
    ] {
        assert!(
            !listed.iter().any(|n| n == tool),
            "{tool} listed: {listed:?}"
        );
    }
    let refused = read
        .call("remember", json!({"content": "Ann takes her tea green"}))
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text(&refused).contains("MCP_SERVER_TOOLS=read"),
        "{refused}"
    );

    // data: remembering for Ann, which the read tier then recalls.
    let mut data = Client::start_with(&vars, dir.path(), &[as_ann, ("MCP_SERVER_TOOLS", "data")]);
    let listed = names(&data.next().await);
    assert!(listed.iter().any(|n| n == "remember"), "{listed:?}");
    assert!(
        !listed.iter().any(|n| n == "update_portfolio"),
        "{listed:?}"
    );
    let saved = data
        .call(
            "remember",
            json!({"content": "Ann takes her tea green", "kind": "preference"}),
        )
        .await;
    assert_eq!(saved["isError"], false, "{saved}");
    let recalled = read.call("recall", json!({"query": "tea"})).await;
    assert_eq!(recalled["isError"], false, "{recalled}");
    assert!(text(&recalled).contains("tea green"), "{recalled}");
    // Another user's server sees nothing of Ann's.
    let mut bob = Client::start_with(&vars, dir.path(), &[("MCP_SERVER_USER", "telegram:901")]);
    bob.next().await;
    let theirs = bob.call("recall", json!({"query": "tea"})).await;
    assert!(!text(&theirs).contains("tea green"), "{theirs}");

    // act without a chat to ask in: the order is refused, not run.
    let mut lone_vars = vars.clone();
    lone_vars.remove("MCP_NOTIFY_CHAT");
    let mut lone = Client::start_with(
        &lone_vars,
        dir.path(),
        &[as_ann, ("MCP_SERVER_TOOLS", "act")],
    );
    let listed = names(&lone.next().await);
    assert!(listed.iter().any(|n| n == "update_portfolio"), "{listed:?}");
    assert!(!listed.iter().any(|n| n == "exec_command"), "{listed:?}");
    let order = json!({"op": "buy", "symbol": "AAPL", "quantity": 10, "price": 100});
    let unasked = lone.call("update_portfolio", order.clone()).await;
    assert_eq!(unasked["isError"], true, "{unasked}");
    assert!(text(&unasked).contains("MCP_NOTIFY_CHAT"), "{unasked}");
    let view = read.call("portfolio", json!({})).await;
    assert!(!text(&view).contains("AAPL"), "{view}");

    // act with the chat: a card (Allow once, Always, Deny — no Edit) that Ann allows.
    let (running, shutdown) = gateway(&vars).await;
    let mut act = Client::start_with(&vars, dir.path(), &[as_ann, ("MCP_SERVER_TOOLS", "act")]);
    act.next().await;
    act.send("update_portfolio", order).await;
    let card = wait_for(&tg, "update_portfolio").await;
    let markup = card.reply_markup.as_ref().unwrap().to_string();
    assert_eq!(markup.matches("callback_data").count(), 3, "{markup}");
    assert!(!markup.contains(":e\""), "an Edit button: {markup}");
    assert!(card.text.contains("AAPL"), "{}", card.text);
    tg.callback(
        Where::Group(GROUP),
        &ann,
        card.message_id,
        &button(&card, ":y"),
    );
    let done = act.next().await;
    assert_eq!(done["isError"], false, "{done}");
    let view = read.call("portfolio", json!({})).await;
    assert!(text(&view).contains("AAPL"), "{view}");
    assert!(
        tg.wait_until(WAIT, |t| t.stored(GROUP, card.message_id).is_some_and(
            |m| m.reply_markup.is_none() && m.text.contains("Allowed once")
        ))
        .await,
        "the card was not edited to its decision"
    );

    // A denied card: the sale is not run, and the client reads who denied it.
    act.send(
        "update_portfolio",
        json!({"op": "sell", "symbol": "AAPL", "quantity": 4, "price": 120}),
    )
    .await;
    let card = wait_for(&tg, "Sell 4 AAPL").await;
    tg.callback(
        Where::Group(GROUP),
        &ann,
        card.message_id,
        &button(&card, ":n"),
    );
    let denied = act.next().await;
    assert_eq!(denied["isError"], true, "{denied}");
    assert!(text(&denied).contains("denied by Ann"), "{denied}");
    let view = read.call("portfolio", json!({"action": "history"})).await;
    assert!(!text(&view).to_lowercase().contains("sell"), "{view}");

    // Every call and refusal is in the audit log.
    let events = read
        .call("recent_events", json!({"kind": "mcp.tool", "limit": 50}))
        .await;
    let kinds: Vec<(String, String)> = events["structured"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["detail"]["tool"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    for (kind, tool) in [
        ("mcp.tool_refused", "remember"),
        ("mcp.tool_call", "remember"),
        ("mcp.tool_refused", "update_portfolio"),
        ("mcp.tool_call", "update_portfolio"),
    ] {
        assert!(
            kinds.iter().any(|(k, t)| k == kind && t == tool),
            "{kind} {tool} missing from {kinds:?}"
        );
    }
    shutdown.cancel();
    tokio::time::timeout(WAIT, running.wait()).await.unwrap();
}
