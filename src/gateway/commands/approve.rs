//! `/approve`, the typed fallback for an approval card's buttons.

use crate::gateway::session::queue::resume_in;

use crate::approvals::{Choice, TextDecision};
use crate::gateway::Inner;
use std::sync::Arc;
use switchboard_platform::{PlatformAdapter, User};

pub(in crate::gateway) const USAGE: &str = "Usage: /approve <id> allow|always|edit|deny [reason]";

/// `/approve <id> allow|always|edit|deny [reason]`: the text fallback for the
/// card's buttons, under the same authorization. Returns the reply.
pub(in crate::gateway) async fn run(
    inner: &Arc<Inner>,
    adapter: &Arc<dyn PlatformAdapter>,
    user: &User,
    args: &[&str],
) -> String {
    let [id, word, reason @ ..] = args else {
        return USAGE.to_owned();
    };
    let Some(choice) = Choice::from_word(word) else {
        return USAGE.to_owned();
    };
    let reason = (!reason.is_empty()).then(|| reason.join(" "));
    let decided = inner
        .approvals
        .handle_text(adapter.platform(), user, id, choice, reason)
        .await;
    apply(inner, decided)
}

/// Carries out a decision taken by text: the card edited to its final
/// state (on whichever platform it lives) and the paused turn resumed.
/// Returns the reply.
pub(in crate::gateway) fn apply(inner: &Arc<Inner>, decided: TextDecision) -> String {
    if let Some((card, final_card)) = decided.card {
        // The card may live on another platform than the command.
        if let Some(adapter) = inner.adapter(card.chat.platform) {
            tokio::spawn(async move {
                if let Err(e) = adapter.edit(&card, final_card).await {
                    tracing::warn!(error = %e, "could not update the approval card");
                }
            });
        }
    }
    if let Some(record) = decided.resume {
        resume_in(inner, &record);
    }
    decided.reply
}
