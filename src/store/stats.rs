//! Counts of live state across all processes, for monitoring.

use super::{Store, StoreError};

/// What is waiting or running right now, across every process on the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveCounts {
    pub pending_approvals: i64,
    pub running_tasks: i64,
    pub queued_messages: i64,
}

impl Store {
    /// One round trip of three indexed counts.
    pub async fn live_counts(&self) -> Result<LiveCounts, StoreError> {
        let (pending_approvals, running_tasks, queued_messages): (i64, i64, i64) = sqlx::query_as(
            "SELECT
                    (SELECT COUNT(*) FROM approvals WHERE status = 'pending'),
                    (SELECT COUNT(*) FROM tasks WHERE finished_at IS NULL),
                    (SELECT COUNT(*) FROM inbox)",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(LiveCounts {
            pending_approvals,
            running_tasks,
            queued_messages,
        })
    }
}
