//! Schedule rows and their claim: each occurrence fires once, even with several
//! gateway processes (a conditional update on the occurrence's due time, under
//! `FOR UPDATE SKIP LOCKED` on PostgreSQL).

use super::{Backend, Store, StoreError};
use crate::domain::{Conversation, ScheduleId, SessionId};
use sqlx::Row;

/// Schedules: future work on a conversation's behalf, and its due occurrences (`store.schedules()`).
#[derive(Debug, Clone, Copy)]
pub struct Schedules<'a> {
    pub(super) db: &'a Store,
}

/// A stored schedule.
#[derive(Debug, Clone)]
pub struct ScheduleRecord {
    pub id: ScheduleId,
    pub session_id: SessionId,
    pub origin: Conversation,
    pub kind: String,
    pub spec: String,
    pub timezone: String,
    pub prompt: String,
    pub missed: String,
    /// Epoch ms of the next occurrence; `None` once a one-off has fired.
    pub next_run_at: Option<i64>,
    pub last_fired_at: Option<i64>,
    pub fired_count: i64,
    pub active: bool,
}

/// What happens to a due occurrence: where the schedule moves next (`None`
/// ends it) and whether this occurrence runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OccurrencePlan {
    pub next: Option<i64>,
    pub run: bool,
    /// Due longer ago than the grace period (the gateway was down).
    pub missed: bool,
}

/// An occurrence this caller claimed: the schedule as it was when due.
#[derive(Debug, Clone)]
pub struct ClaimedOccurrence {
    pub schedule: ScheduleRecord,
    pub due_ms: i64,
    pub plan: OccurrencePlan,
}

pub(super) const COLUMNS: &str =
    "id, session_id, origin, kind, spec, timezone, prompt, missed, next_run_at, last_fired_at, fired_count, active";

impl Schedules<'_> {
    pub async fn insert(self, s: &ScheduleRecord) -> Result<(), StoreError> {
        insert_schedule_query(s)?.execute(&self.db.pool).await?;
        Ok(())
    }

    /// Claims up to `limit` occurrences due at `now_ms`, oldest first, in one
    /// write transaction. `plan` decides, per schedule, its next occurrence and
    /// whether this one runs (a missed occurrence may be skipped); each row is
    /// moved on by a conditional update on the due time, so an occurrence is
    /// claimed by exactly one caller, in any number of processes, and audited
    /// (`schedule.fired` / `schedule.skipped`) in the same transaction. On PostgreSQL
    /// the rows are locked with `FOR UPDATE SKIP LOCKED`, so concurrent
    /// claimers take disjoint batches instead of queueing behind each other; on
    /// SQLite `BEGIN IMMEDIATE` makes the whole batch one writer.
    pub async fn claim_due<F>(
        self,
        now_ms: i64,
        limit: u32,
        mut plan: F,
    ) -> Result<Vec<ClaimedOccurrence>, StoreError>
    where
        F: FnMut(&ScheduleRecord) -> OccurrencePlan,
    {
        let lock = match self.db.backend {
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let mut tx = self.db.begin_write().await?;
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM schedules WHERE active = 1 AND next_run_at IS NOT NULL AND next_run_at <= $1
             ORDER BY next_run_at LIMIT $2{lock}"
        ))
        .bind(now_ms)
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        let fired_at = super::now();
        let mut claimed = Vec::with_capacity(rows.len());
        for row in &rows {
            let schedule = schedule_from_row(row)?;
            let Some(due_ms) = schedule.next_run_at else {
                continue;
            };
            let plan = plan(&schedule);
            let done = sqlx::query(
                "UPDATE schedules SET next_run_at = $1,
                     last_fired_at = CASE WHEN $2 THEN $3 ELSE last_fired_at END,
                     fired_count = fired_count + CASE WHEN $2 THEN 1 ELSE 0 END,
                     active = CASE WHEN $1 IS NULL THEN 0 ELSE active END
                 WHERE id = $4 AND next_run_at = $5 AND active = 1",
            )
            .bind(plan.next)
            .bind(plan.run)
            .bind(fired_at)
            .bind(&schedule.id)
            .bind(due_ms)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 {
                claimed.push(ClaimedOccurrence {
                    schedule,
                    due_ms,
                    plan,
                });
            }
        }
        // One multi-row insert audits the whole batch.
        if !claimed.is_empty() {
            let values: Vec<String> = (0..claimed.len())
                .map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3))
                .collect();
            let sql = format!(
                "INSERT INTO system_events (at, kind, detail) VALUES {}",
                values.join(", ")
            );
            let mut insert = sqlx::query(&sql);
            for c in &claimed {
                let kind = if c.plan.run {
                    "schedule.fired"
                } else {
                    "schedule.skipped"
                };
                let detail = serde_json::json!({
                    "id": c.schedule.id,
                    "missed": c.plan.missed,
                    "late_ms": now_ms - c.due_ms,
                });
                insert = insert.bind(fired_at).bind(kind).bind(detail.to_string());
            }
            insert.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(claimed)
    }

    /// When the earliest active occurrence is due (epoch ms), if any.
    pub async fn next_due(self) -> Result<Option<i64>, StoreError> {
        let next: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(next_run_at) FROM schedules WHERE active = 1 AND next_run_at IS NOT NULL",
        )
        .fetch_one(&self.db.pool)
        .await?;
        Ok(next)
    }

    pub async fn of_session(
        self,
        session_id: &SessionId,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM schedules WHERE session_id = $1 AND active = 1 ORDER BY next_run_at"
        ))
        .bind(session_id)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    /// Stops one of the session's active schedules, named by its id or an
    /// unambiguous prefix of 6+ characters. Returns the full id when it did.
    pub async fn cancel(
        self,
        session_id: &SessionId,
        prefix: &str,
    ) -> Result<Option<ScheduleId>, StoreError> {
        if prefix.len() < 6
            || !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Ok(None);
        }
        let ids: Vec<ScheduleId> = sqlx::query_scalar(
            "SELECT id FROM schedules WHERE session_id = $1 AND id LIKE $2 AND active = 1 LIMIT 2",
        )
        .bind(session_id)
        .bind(format!("{prefix}%"))
        .fetch_all(&self.db.pool)
        .await?;
        let [only] = ids.as_slice() else {
            return Ok(None);
        };
        let done = sqlx::query("UPDATE schedules SET active = 0 WHERE id = $1 AND active = 1")
            .bind(only)
            .execute(&self.db.pool)
            .await?;
        Ok((done.rows_affected() == 1).then(|| only.clone()))
    }
}

pub(super) fn schedule_from_row(r: &sqlx::any::AnyRow) -> Result<ScheduleRecord, StoreError> {
    let origin: String = r.try_get("origin")?;
    Ok(ScheduleRecord {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        origin: serde_json::from_str(&origin)
            .map_err(|e| StoreError::Corrupt(format!("schedule origin: {e}")))?,
        kind: r.try_get("kind")?,
        spec: r.try_get("spec")?,
        timezone: r.try_get("timezone")?,
        prompt: r.try_get("prompt")?,
        missed: r.try_get("missed")?,
        next_run_at: r.try_get("next_run_at")?,
        last_fired_at: r.try_get("last_fired_at")?,
        fired_count: r.try_get("fired_count")?,
        active: r.try_get::<i64, _>("active")? == 1,
    })
}

/// The insert of a new schedule row (also run inside a capped transaction).
pub(super) fn insert_schedule_query(
    s: &ScheduleRecord,
) -> Result<sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments<'static>>, StoreError> {
    let origin =
        serde_json::to_string(&s.origin).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(sqlx::query(
        "INSERT INTO schedules (id, session_id, origin, kind, spec, timezone, prompt, missed, next_run_at, active, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10)",
    )
    .bind(s.id.clone())
    .bind(s.session_id.clone())
    .bind(origin)
    .bind(s.kind.clone())
    .bind(s.spec.clone())
    .bind(s.timezone.clone())
    .bind(s.prompt.clone())
    .bind(s.missed.clone())
    .bind(s.next_run_at)
    .bind(super::now()))
}
