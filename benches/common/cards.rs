//! Open approval cards for the throughput benches (`BENCH_CARDS=N`), included
//! with `#[path]` next to `mod support`: N extra users each ask for something
//! that needs approval, and the cards stay open while the bench measures.

use crate::support::fake_llm::Reply;
use std::time::Duration;
use tokio::time::Instant;

/// What a card user asks (mentions already stripped by the adapter).
pub const OPEN_A_CARD: &str = "open a card";

/// How long all cards may take to show.
const SHOW_WITHIN: Duration = Duration::from_secs(600);

/// `BENCH_CARDS`: how many cards to leave open (0 when unset).
pub fn wanted() -> usize {
    std::env::var("BENCH_CARDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The model's answer to a card request: a command that needs approval.
pub fn model_reply(asked: &str) -> Option<Reply> {
    asked.starts_with(OPEN_A_CARD).then(|| {
        let command = serde_json::json!({ "command": "echo carded" });
        Reply::tool_calls([("call_1", "exec_command", command)])
    })
}

/// Waits until `shown(i)` holds for every card `0..n` (each checked until
/// it holds), then says how many are open and how long they took.
pub async fn wait_shown(n: usize, asked: Instant, shown: impl Fn(usize) -> bool) {
    let mut pending: Vec<usize> = (0..n).collect();
    while !pending.is_empty() {
        pending.retain(|&i| !shown(i));
        assert!(
            asked.elapsed() < SHOW_WITHIN,
            "{} of {n} approval cards never shown",
            pending.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "  {n} approval cards open (shown in {:.1} s); they stay open below",
        asked.elapsed().as_secs_f64()
    );
}
