//! `/stop`: cancels the turn a session is running now, leaving its queue
//! alone; with none running, denies the card its paused turn waits at.

use crate::approvals::Choice;
use crate::gateway::Inner;
use crate::store::SessionKey;
use std::sync::Arc;
use switchboard_platform::User;

/// The reply to `/stop` when the session runs no turn.
pub(crate) const NOTHING_TO_STOP: &str = "Nothing is running to stop.";

/// `/stop all`'s part: cancels the session's background tasks. The reply
/// part saying how many, or why none could be.
pub(in crate::gateway) async fn cancel_tasks(inner: &Inner, key: &SessionKey) -> String {
    let stopped = match inner.store.sessions().open(key).await {
        Ok(session) => inner.tasks.cancel_all_in_session(&session).await,
        Err(e) => Err(e),
    };
    match stopped {
        Ok(0) => "No background task was running.".to_owned(),
        Ok(1) => "Stopped 1 background task.".to_owned(),
        Ok(n) => format!("Stopped {n} background tasks."),
        Err(e) => {
            tracing::error!(error = %e, "could not stop the background tasks");
            "⚠️ I can't reach the background tasks right now (storage unavailable).".to_owned()
        }
    }
}

/// `/stop` while no turn runs: a turn of this session paused at a card (or
/// waiting for an edit of one) ends there — the card is denied, as a press
/// on Deny would, and the turn resumes with that. `None` when nothing waits.
pub(in crate::gateway) async fn deny_waiting_card(
    inner: &Arc<Inner>,
    key: &SessionKey,
    user: &User,
) -> Option<String> {
    let waiting = match inner.store.approvals().pending(inner.approvals.now()).await {
        Ok(pending) => pending.into_iter().find(|a| a.session_key() == *key),
        Err(e) => {
            tracing::warn!(error = %e, "could not look for a waiting card");
            None
        }
    };
    let record = waiting?;
    let decided = inner
        .approvals
        .handle_text(
            key.platform,
            user,
            record.id.as_str(),
            Choice::Deny,
            Some("stopped with /stop".into()),
        )
        .await;
    Some(crate::gateway::commands::approve::apply(inner, decided))
}
