//! Per-tool key fields end to end: the `portfolio` tool's spec names the
//! fields its results keep, and a compaction folding an early portfolio view
//! carries those lines word for word — to the summarizer, and in the summary's
//! `[kept verbatim]` block the model sees afterwards — while other tools'
//! results are only summarized.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use support::e2e::{messages, Harness};
use support::fake_llm::Reply;
use switchboard::llm::{Message, ToolCall};

const HOLDING: &str = "- AAPL: 12.5 units, average cost 150.25, cost basis 1878.125 (62.6%)";

fn is_summarize(request: &Value) -> bool {
    messages(request)[0]["content"]
        .as_str()
        .unwrap_or_default()
        .starts_with("You compress the earlier part")
}

fn call(id: &str, name: &str, arguments: Value) -> Message {
    let mut m = Message::assistant("");
    m.tool_calls.push(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    });
    m
}

/// A long history whose first round viewed the portfolio.
fn history() -> Vec<Message> {
    let overview = format!(
        "USD — cost basis 3000.125\n{HOLDING}\n- MSFT: 3 units, average cost 374, cost basis 1122 (37.4%)\n(Cost basis only: current prices are not known to the ledger.)"
    );
    let mut history = vec![
        Message::user("how are my holdings?"),
        call("call_p", "portfolio", json!({"action": "view"})),
        Message::tool_result("call_p", overview),
        Message::assistant("You hold AAPL and MSFT."),
    ];
    for i in 0..24 {
        history.push(Message::user(format!(
            "Question {i}: {}",
            "please look at the report data ".repeat(12)
        )));
        history.push(call(
            &format!("call_{i}"),
            "read_file",
            json!({"path": format!("r{i}.json")}),
        ));
        let result = json!({"rows": vec!["x".repeat(40); 30], "units": "7 units of filler"});
        history.push(Message::tool_result(
            format!("call_{i}"),
            result.to_string(),
        ));
        history.push(Message::assistant(format!(
            "Answer {i}: {}",
            "the numbers look fine ".repeat(10)
        )));
    }
    history
}

#[tokio::test]
async fn a_compacted_portfolio_view_keeps_its_holdings_verbatim() {
    let h = Harness::with(&[("LLM_CONTEXT_WINDOW", "20000")]).await;
    let session = h.session(1, 1).await;
    h.running
        .store
        .history()
        .append(&session, &history())
        .await
        .unwrap();
    h.llm.set_responder(|request| {
        if is_summarize(request) {
            Reply::text(
                &json!({"summary": "Holdings and reports reviewed.", "task_state": {}}).to_string(),
            )
        } else {
            Reply::text("Continuing.")
        }
    });
    h.channel.dm(1, "What next?").await;
    h.wait_for("the answer", |l| l.any_contains("Continuing."))
        .await;
    h.idle().await;
    let requests = h.llm.requests().await;
    let summarize = requests
        .iter()
        .find(|r| is_summarize(r))
        .expect("a compaction");
    let transcript = messages(summarize)[1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        transcript.contains(&format!(
            "[tool result of portfolio, kept fields] USD — cost basis 3000.125; {HOLDING}"
        )),
        "{transcript}"
    );
    assert!(
        !transcript.contains("[tool result of read_file"),
        "read_file names no fields"
    );
    let answered = requests.iter().rev().find(|r| !is_summarize(r)).unwrap();
    let summary = messages(answered)
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("[conversation summary]"))
        .expect("the summary message")
        .to_owned();
    assert!(summary.contains("[kept verbatim]"), "{summary}");
    assert!(
        summary.contains(&format!("- portfolio: {HOLDING}")),
        "{summary}"
    );
    assert!(
        summary.contains("- portfolio: USD — cost basis 3000.125"),
        "{summary}"
    );
    assert!(!summary.contains("7 units of filler"), "{summary}");
    assert!(
        !summary.contains("portfolio: (Cost basis only"),
        "{summary}"
    );
    h.stop().await;
}
