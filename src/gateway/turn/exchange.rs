//! Holding an answered exchange whose saving failed (storage down): it is not
//! dropped from history but kept in the local spool and retried with the
//! storage backoff until saved — the session's next input waits, so history
//! keeps its order. A process that stops first leaves the spooled copy for the
//! next start, which saves it before taking new work.

use crate::gateway::spool::SpoolFile;
use crate::gateway::Inner;
use crate::llm::Message;
use crate::store::{Backoff, SessionId};
use switchboard_platform::Platform;

/// An exchange not saved yet.
pub(crate) struct HeldExchange {
    session: SessionId,
    messages: Vec<Message>,
    /// Its copy in the spool; `None` when it could not be written.
    file: Option<SpoolFile>,
    /// Why the first attempt failed (for the audit log).
    reason: String,
}

/// Saves `messages` to `session`'s history; when storage fails, keeps them in
/// the spool and returns them held.
pub(crate) async fn save_or_hold(
    inner: &Inner,
    platform: Platform,
    session: &SessionId,
    messages: &[Message],
) -> Option<HeldExchange> {
    let e = match inner.store.history().append(session, messages).await {
        Ok(()) => return None,
        Err(e) => e,
    };
    inner.durability.storage.failed();
    inner.store.recover();
    inner.metrics.inc(
        "switchboard_exchanges_held_total",
        &[("platform", platform.as_str())],
    );
    let file = match &inner.durability.spool {
        Some(spool) => match spool.put_exchange(session, messages) {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::error!(error = %e, "could not spool an unsaved exchange; it is lost if the gateway stops before storage is back");
                None
            }
        },
        None => None,
    };
    tracing::error!(error = %e, spooled = file.is_some(), "could not save the conversation; holding the exchange until storage is back");
    Some(HeldExchange {
        session: session.clone(),
        messages: messages.to_vec(),
        file,
        reason: e.to_string(),
    })
}

impl HeldExchange {
    /// Whether a stop before storage is back loses it.
    pub(crate) fn restart_proof(&self) -> bool {
        self.file.is_some()
    }

    /// Why saving failed at first.
    pub(crate) fn reason(&self) -> &str {
        &self.reason
    }

    /// Retries with backoff until saved (true); false when the gateway stops
    /// first (the spooled copy is then saved by the next start).
    pub(crate) async fn save_when_back(self, inner: &Inner) -> bool {
        let mut backoff = Backoff::default();
        loop {
            if !backoff.wait(&inner.life.shutdown).await {
                return false;
            }
            match inner
                .store
                .history()
                .append(&self.session, &self.messages)
                .await
            {
                Ok(()) => {
                    inner.durability.storage.worked();
                    if let (Some(spool), Some(file)) = (&inner.durability.spool, self.file) {
                        spool.remove(file);
                    }
                    tracing::info!(session = %self.session, "storage is back; the held exchange is saved");
                    return true;
                }
                Err(e) => {
                    inner.durability.storage.failed();
                    inner.store.recover();
                    tracing::error!(error = %e, retry_in = ?backoff.next_wait(), "storage unavailable; the held exchange waits for it");
                }
            }
        }
    }
}
