//! Where an accepted message is kept until its turn's answer is out: its
//! inbox row, or — while storage is down — a file in this process's local
//! spool. A burst is kept in one transaction.

use crate::busy::BusyGuard;
use crate::domain::SessionKey;
use crate::gateway::session::input::Kept;
use crate::gateway::Inner;
use crate::store::{Intake, Keep};
use switchboard_platform::{Ack, InboundMessage};

/// A message accepted for a turn, on its way to being kept.
pub(in crate::gateway) struct Accepted {
    pub(in crate::gateway) msg: InboundMessage,
    pub(in crate::gateway) key: SessionKey,
    /// Its platform may deliver it again: a repeat is dropped when kept.
    pub(in crate::gateway) dedupe: bool,
    pub(in crate::gateway) ack: Ack,
    pub(in crate::gateway) guard: BusyGuard,
}

/// What became of one message of a burst.
#[derive(Debug)]
pub(in crate::gateway) enum KeepOutcome {
    /// Kept: a crash from now on does not lose it.
    Kept(Kept),
    /// Kept (and maybe answered) before: its platform delivered it again.
    Repeat,
    /// Kept nowhere (storage down and no spool): its adapter offers it again.
    Lost,
}

impl Inner {
    /// Keeps a burst of accepted messages across a restart: in the inbox
    /// (one transaction), or each in the local spool while storage is down.
    pub(in crate::gateway) async fn keep_burst(&self, burst: &[Accepted]) -> Vec<KeepOutcome> {
        if !self.durability.storage.is_down() {
            let intakes: Vec<Intake<'_>> = burst
                .iter()
                .map(|a| Intake {
                    message: &a.msg,
                    dedupe: a.dedupe,
                })
                .collect();
            match self
                .store
                .inbox()
                .keep(&self.durability.instance, &intakes)
                .await
            {
                Ok(kept) => {
                    return kept
                        .into_iter()
                        .map(|k| match k {
                            Keep::Row(id) => KeepOutcome::Kept(Kept::Inbox(id)),
                            Keep::Repeat => KeepOutcome::Repeat,
                        })
                        .collect()
                }
                Err(e) => {
                    self.durability.storage.failed();
                    tracing::warn!(error = %e, count = burst.len(), "could not store inbound messages; spooling them locally");
                }
            }
        }
        burst.iter().map(|a| self.spool_one(a)).collect()
    }

    fn spool_one(&self, accepted: &Accepted) -> KeepOutcome {
        let Some(spool) = &self.durability.spool else {
            tracing::error!("storage is down and there is no spool; an inbound message stays with its platform until it can be kept");
            return KeepOutcome::Lost;
        };
        match spool.put(&accepted.msg, accepted.dedupe) {
            Ok(file) => KeepOutcome::Kept(Kept::Spool(file)),
            Err(e) => {
                tracing::error!(error = %e, "could not spool an inbound message; it stays with its platform until it can be kept");
                KeepOutcome::Lost
            }
        }
    }

    /// A message's turn is about to start. `None` when the turn must not
    /// run here: another process took the message over (this one's
    /// liveness claim lapsed for a while). Otherwise the inbox row to
    /// remove once the turn's answer is out (see `in_flight.rs`), if it has
    /// one; a spooled copy is done with now.
    pub(crate) async fn taken(&self, kept: Kept) -> Option<Option<i64>> {
        match kept {
            Kept::Inbox(id) => match self
                .store
                .inbox()
                .start(&self.durability.instance, id)
                .await
            {
                Ok(true) => Some(Some(id)),
                Ok(false) => {
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
                if let Some(spool) = &self.durability.spool {
                    spool.remove(file);
                }
                Some(None)
            }
        }
    }
}
