//! Expiry, run by every process's sweeper: cards past their deadline and
//! edits nobody sent within the approval timeout. The conditional updates make
//! one process the expirer of each; the caller resumes the paused turns.

use super::Approvals;
use crate::domain::ApprovalId;
use serde_json::json;
use std::sync::Arc;
use switchboard_platform::{MessageRef, Platform, PlatformAdapter};

impl Approvals {
    /// Expires what is due, marking the cards, and returns the approvals
    /// whose paused turns now resume (with the expiry, read as a denial).
    pub async fn expire_due(
        &self,
        adapter_of: impl Fn(Platform) -> Option<Arc<dyn PlatformAdapter>>,
    ) -> Vec<ApprovalId> {
        let mut expired = self.expire_stale_edits().await;
        let due = match self.store.approvals().due(self.now()).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "could not list due approvals");
                return expired;
            }
        };
        for record in due {
            let Some(adapter) = adapter_of(record.chat.platform) else {
                continue;
            };
            let card = record.card_message.map(|id| MessageRef {
                chat: record.chat,
                id,
            });
            match self.expire(adapter.as_ref(), &record.id, card).await {
                Ok(true) => expired.push(record.id),
                // Decided meanwhile: whoever decided resumes it.
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "could not expire an approval"),
            }
        }
        expired
    }

    /// Approvals sent back for editing whose new arguments never came.
    async fn expire_stale_edits(&self) -> Vec<ApprovalId> {
        let timeout =
            chrono::Duration::from_std(self.timeout).unwrap_or(chrono::Duration::minutes(10));
        let cutoff = (self.now() - timeout).timestamp_millis();
        match self.store.turns().expire_stale_edits(cutoff).await {
            Ok(ids) => {
                for id in &ids {
                    self.store
                        .audit()
                        .record("approval.expired", json!({ "id": id }))
                        .await;
                }
                ids
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not expire edits nobody sent");
                Vec::new()
            }
        }
    }
}
