//! At start, the approval cards still open on a local operator's channel (the
//! console) are shown again: its transcript ended with the last process (a
//! chat platform keeps its cards, whose buttons keep working), so without this
//! nobody could see or answer them.

use crate::gateway::Inner;
use std::sync::Arc;

/// Shows every pending card of a local operator's channel again, with the
/// time it has left; a key pressed on it decides it, and the paused turn
/// resumes as after any restart.
pub(crate) async fn console_cards(inner: &Arc<Inner>) {
    let Some(adapter) = inner
        .platforms
        .adapters
        .values()
        .find(|a| a.capabilities().local_operator)
        .cloned()
    else {
        return;
    };
    let platform = adapter.platform();
    let now = inner.approvals.now();
    let pending = match inner.store.approvals().pending(now).await {
        Ok(pending) => pending,
        Err(e) => return tracing::warn!(error = %e, "could not look for open console cards"),
    };
    for a in pending.into_iter().filter(|a| a.chat.platform == platform) {
        let left = (a.expires_at - now).to_std().unwrap_or_default();
        let card = crate::approvals::pending_card(&a, left);
        // The old card's message is gone with the old transcript: until the new
        // one is recorded, a key in the chat decides the card.
        if let Err(e) = inner.store.approvals().forget_card(&a.id).await {
            tracing::warn!(error = %e, "could not reset an open console card");
            continue;
        }
        let shown = match adapter.send(&a.chat, card).await {
            Ok(shown) => shown,
            Err(e) => {
                tracing::warn!(error = %e, "could not show an open console card again");
                continue;
            }
        };
        if let Err(e) = inner.store.approvals().set_card(&a.id, shown.id).await {
            tracing::warn!(error = %e, "could not record a console card shown again; it stays valid");
        }
    }
}
