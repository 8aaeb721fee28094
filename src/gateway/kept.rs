//! Where an accepted message is kept until its turn starts: its inbox row,
//! or — while storage is down — a file in this process's local spool.

use super::spool::SpoolFile;
use super::Inner;
use std::sync::atomic::Ordering;
use switchboard_platform::InboundMessage;

/// Where an accepted message is kept until its turn starts.
#[derive(Debug)]
pub(crate) enum Kept {
    /// Its inbox row.
    Inbox(i64),
    /// Its file in this process's spool (storage was down).
    Spool(SpoolFile),
}

impl Inner {
    /// Keeps an accepted message across a restart: in the inbox, or in the
    /// local spool while storage is down. `None` when neither worked (the
    /// message is still handled, only not restart-proof).
    pub(super) async fn keep(&self, msg: &InboundMessage) -> Option<Kept> {
        if !self.storage.is_down() {
            match self.store.inbox_add(&self.instance, msg).await {
                Ok(id) => {
                    self.inbox_held.fetch_add(1, Ordering::Relaxed);
                    return Some(Kept::Inbox(id));
                }
                Err(e) => {
                    self.storage.failed();
                    tracing::warn!(error = %e, "could not store an inbound message; spooling it locally");
                }
            }
        }
        let Some(spool) = &self.spool else {
            tracing::warn!("storage is down and there is no spool; an inbound message will not survive a restart");
            return None;
        };
        match spool.put(msg) {
            Ok(file) => Some(Kept::Spool(file)),
            Err(e) => {
                tracing::error!(error = %e, "could not spool an inbound message; it will not survive a restart");
                None
            }
        }
    }

    /// A message's turn is about to start. `None` when the turn must not
    /// run here: another process took the message over while this one could
    /// not renew its inbox lease. Otherwise the inbox row to remove when the
    /// turn ends (see `in_flight.rs`), if it has one; a spooled copy is
    /// done with now.
    pub(crate) async fn taken(&self, kept: Kept) -> Option<Option<i64>> {
        match kept {
            Kept::Inbox(id) => match self.store.inbox_start(&self.instance, id).await {
                Ok(true) => Some(Some(id)),
                Ok(false) => {
                    self.inbox_held.fetch_sub(1, Ordering::Relaxed);
                    tracing::info!(
                        id,
                        "a queued message was taken over by another process; it answers it"
                    );
                    None
                }
                Err(e) => {
                    // Storage answered the session lookup just now; a
                    // failure here is rare and the message is answered
                    // rather than dropped (at worst twice).
                    tracing::warn!(error = %e, "could not mark an inbox row started");
                    Some(Some(id))
                }
            },
            Kept::Spool(file) => {
                if let Some(spool) = &self.spool {
                    spool.remove(file);
                }
                Some(None)
            }
        }
    }
}
