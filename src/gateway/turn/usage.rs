//! What a finished (or paused) turn adds to the counters: `/metrics` by
//! platform, outcome and model, and the user's usage priced per model.

use crate::agent::{StopReason, TurnOutcome};
use crate::gateway::delivery::origin::Origin;
use crate::gateway::Inner;
use crate::metrics::Latency;

/// The answer reached the chat: how long after the user sent their message
/// its first byte did (`first_byte`: the draft's, else now).
pub(in crate::gateway) fn delivered(
    inner: &Inner,
    o: &Origin,
    first_byte: Option<std::time::Instant>,
) {
    let Some(sent_at) = o.sent_at else { return };
    let since_first = first_byte.map_or(std::time::Duration::ZERO, |t| t.elapsed());
    let waited = (chrono::Utc::now() - sent_at)
        .to_std()
        .unwrap_or_default()
        .saturating_sub(since_first);
    inner.metrics.observe(
        Latency::Delivery,
        &[("platform", o.conversation.chat.platform.as_str())],
        waited,
    );
}

/// Counts the turn for `/metrics`: by platform and how it stopped, and the
/// intent guard's checks.
pub(in crate::gateway) fn count(
    inner: &Inner,
    o: &Origin,
    served: &str,
    outcome: &TurnOutcome,
    took: std::time::Duration,
) {
    let platform = o.conversation.chat.platform.as_str();
    let labels = [("platform", platform), ("stop", outcome.stop.as_str())];
    inner.metrics.inc("switchboard_turns_total", &labels);
    inner.metrics.observe(Latency::Turn, &labels, took);
    if outcome.stop != StopReason::Paused {
        inner
            .metrics
            .inc("switchboard_turns_by_model_total", &[("model", served)]);
    }
    if outcome.intent_corrections > 0 && outcome.stop == StopReason::Answered {
        let result = if outcome.intent_unmet {
            "unmet"
        } else {
            "corrected"
        };
        inner.metrics.inc(
            "switchboard_intent_checks_total",
            &[("platform", platform), ("outcome", result)],
        );
    }
}

/// Adds the turn's tokens (and `turns`: 1 for a finished turn, 0 for a pause,
/// which is counted once it finishes) to the user's usage.
pub(in crate::gateway) async fn record(
    inner: &Inner,
    o: &Origin,
    served: &str,
    outcome: &TurnOutcome,
    turns: u32,
) {
    let key = &o.conversation.key;
    // Priced now: a later price change does not rewrite it.
    crate::models::record_usage(
        &inner.store,
        key.platform,
        key.user,
        served,
        &outcome.usage,
        turns,
    )
    .await;
}
