//! Approvals still waiting for a decision, for `/approvals`, `switchboard
//! approvals pending` and a console that restarts.

use super::approvals::{approval_from_row, COLUMNS};
use super::{ms, ApprovalRecord, Approvals, StoreError};
use crate::domain::ApprovalId;
use chrono::{DateTime, Utc};

impl Approvals<'_> {
    /// Pending approvals not yet past their deadline at `now`, oldest first.
    pub async fn pending(self, now: DateTime<Utc>) -> Result<Vec<ApprovalRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at > $1
             ORDER BY created_at, id"
        ))
        .bind(ms(now))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(approval_from_row).collect()
    }

    /// Forgets which message shows an approval's card (a press anywhere in
    /// its chat decides it) while the card is shown again.
    pub async fn forget_card(self, id: &ApprovalId) -> Result<(), StoreError> {
        sqlx::query("UPDATE approvals SET card_message_id = NULL WHERE id = $1")
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }
}
