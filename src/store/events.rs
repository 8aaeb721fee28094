//! The audit log of system events: readable by the operator, never by the agent.

use super::{dt, now, Store, StoreError};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// The audit log: system events, newest first.
#[derive(Debug, Clone, Copy)]
pub struct Audit<'a> {
    pub(super) db: &'a Store,
}

/// One audit entry.
#[derive(Debug, Clone)]
pub struct SystemEvent {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub kind: String,
    pub detail: serde_json::Value,
}

impl Audit<'_> {
    /// Records an event. Failures are logged, never propagated: auditing must
    /// not break the action it records.
    pub async fn record(self, kind: &str, detail: serde_json::Value) {
        if let Err(e) = self.try_record(kind, &detail).await {
            tracing::warn!(error = %e, kind, "could not record system event");
        }
    }

    /// Records an event, saying whether it was written (for an entry that
    /// must not be lost, retried by the caller).
    pub async fn try_record(
        self,
        kind: &str,
        detail: &serde_json::Value,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO system_events (at, kind, detail) VALUES ($1, $2, $3)")
            .bind(now())
            .bind(kind)
            .bind(detail.to_string())
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// The latest `limit` events, newest first.
    pub async fn recent(self, limit: u32) -> Result<Vec<SystemEvent>, StoreError> {
        let rows =
            sqlx::query("SELECT id, at, kind, detail FROM system_events ORDER BY id DESC LIMIT $1")
                .bind(i64::from(limit))
                .fetch_all(&self.db.pool)
                .await?;
        rows.iter()
            .map(|r| {
                let detail: String = r.try_get("detail")?;
                Ok(SystemEvent {
                    id: r.try_get("id")?,
                    at: dt(r.try_get("at")?),
                    kind: r.try_get("kind")?,
                    detail: serde_json::from_str(&detail)
                        .unwrap_or(serde_json::Value::String(detail)),
                })
            })
            .collect()
    }
}
