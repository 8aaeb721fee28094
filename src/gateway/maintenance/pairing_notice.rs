//! Telling users that the operator approved their pairing code: the approval
//! is made with `switchboard pair approve` (another process), so the gateway
//! looks for approvals nobody announced and writes to the DM they asked in.

use crate::gateway::Inner;
use switchboard_platform::{ChatAddress, OutgoingMessage};

/// What an approved user reads.
pub(crate) const APPROVED_NOTICE: &str =
    "✅ The operator approved your pairing code: you can write to me now.";

/// Sends the approval notice to every approved, unannounced user of the
/// platforms this gateway runs; each one is claimed first, so of several
/// processes exactly one tells the user.
pub(crate) async fn announce_approved_pairings(inner: &Inner) {
    for (platform, adapter) in &inner.platforms.adapters {
        let approved = match inner.store.unannounced_pairings(*platform).await {
            Ok(approved) => approved,
            Err(e) => {
                return tracing::warn!(error = %e, "could not look for approved pairing requests")
            }
        };
        for pairing in approved {
            match inner.store.claim_pairing_notice(&pairing.code).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "could not claim a pairing notice");
                    continue;
                }
            }
            let to = ChatAddress::new(*platform, pairing.chat, None);
            match adapter
                .send(&to, OutgoingMessage::text(APPROVED_NOTICE))
                .await
            {
                Ok(_) => tracing::info!(
                    platform = %platform,
                    user = %pairing.user,
                    "told the user their pairing was approved"
                ),
                Err(e) => tracing::warn!(
                    platform = %platform,
                    user = %pairing.user,
                    error = %e,
                    "could not tell the user their pairing was approved"
                ),
            }
        }
    }
}
