//! Resumed turns while they run (see the `resumes_in_flight` migration):
//! marked at start, removed at the end, owned like the inbox rows so that
//! the marks a gone process left are taken over once (see `liveness.rs`).

use super::{now, PausedTurns, StoreError};
use crate::domain::{ApprovalId, Conversation, ProcessId};
use sqlx::Row;

/// A resumed turn a gone process left unfinished.
#[derive(Debug, Clone)]
pub struct InterruptedResume {
    pub approval_id: ApprovalId,
    pub conversation: Conversation,
    /// The call the card was about, and whether it was allowed.
    pub tool: String,
    pub allowed: bool,
}

impl PausedTurns<'_> {
    /// Marks the turn resumed on `approval_id` as running in `owner`.
    pub async fn resume_started(
        self,
        owner: &ProcessId,
        approval_id: &ApprovalId,
        conversation: &Conversation,
        tool: &str,
        allowed: bool,
    ) -> Result<(), StoreError> {
        let conversation =
            serde_json::to_string(conversation).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO resumes_in_flight (approval_id, owner, lease_until, conversation, tool, allowed, started_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (approval_id) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until",
        )
        .bind(approval_id)
        .bind(owner)
        // Never lapsing for an earlier version reading leases.
        .bind(i64::MAX / 4)
        .bind(conversation)
        .bind(tool)
        .bind(i64::from(allowed))
        .bind(now())
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// The resumed turn ended.
    pub async fn resume_ended(self, approval_id: &ApprovalId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM resumes_in_flight WHERE approval_id = $1")
            .bind(approval_id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// Takes the marks of `gone` (a process that is gone): each is removed
    /// by one taker, who tells its chat.
    pub async fn take_interrupted_resumes(
        self,
        gone: &ProcessId,
    ) -> Result<Vec<InterruptedResume>, StoreError> {
        let rows = sqlx::query(
            "DELETE FROM resumes_in_flight WHERE owner = $1
             RETURNING approval_id, conversation, tool, allowed",
        )
        .bind(gone)
        .fetch_all(&self.db.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let json: String = row.try_get("conversation")?;
            match serde_json::from_str(&json) {
                Ok(conversation) => out.push(InterruptedResume {
                    approval_id: row.try_get("approval_id")?,
                    conversation,
                    tool: row.try_get("tool")?,
                    allowed: row.try_get::<i64, _>("allowed")? != 0,
                }),
                Err(e) => tracing::warn!(error = %e, "dropping an unreadable resumed-turn mark"),
            }
        }
        Ok(out)
    }
}
