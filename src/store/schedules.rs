//! Schedule rows and their claim: each occurrence fires once, even with several
//! gateway processes (a conditional update on the occurrence's due time).

use super::turns::TurnOrigin;
use super::{Store, StoreError};
use sqlx::Row;

/// A stored schedule.
#[derive(Debug, Clone)]
pub struct ScheduleRecord {
    pub id: String,
    pub session_id: String,
    pub origin: TurnOrigin,
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

const COLUMNS: &str =
    "id, session_id, origin, kind, spec, timezone, prompt, missed, next_run_at, last_fired_at, fired_count, active";

impl Store {
    pub async fn insert_schedule(&self, s: &ScheduleRecord) -> Result<(), StoreError> {
        let origin =
            serde_json::to_string(&s.origin).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO schedules (id, session_id, origin, kind, spec, timezone, prompt, missed, next_run_at, active, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10)",
        )
        .bind(&s.id)
        .bind(&s.session_id)
        .bind(origin)
        .bind(&s.kind)
        .bind(&s.spec)
        .bind(&s.timezone)
        .bind(&s.prompt)
        .bind(&s.missed)
        .bind(s.next_run_at)
        .bind(super::now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Active schedules due at `now_ms`, oldest first.
    pub async fn due_schedules(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM schedules WHERE active = 1 AND next_run_at IS NOT NULL AND next_run_at <= $1
             ORDER BY next_run_at LIMIT $2"
        ))
        .bind(now_ms)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    /// Claims the occurrence due at `due_ms` by moving the schedule to `next`
    /// (`None` ends it). Only one caller per occurrence gets `true`.
    pub async fn claim_occurrence(
        &self,
        id: &str,
        due_ms: i64,
        next: Option<i64>,
        fired: bool,
    ) -> Result<bool, StoreError> {
        let now = super::now();
        let done = sqlx::query(
            "UPDATE schedules SET next_run_at = $1,
                 last_fired_at = CASE WHEN $2 THEN $3 ELSE last_fired_at END,
                 fired_count = fired_count + CASE WHEN $2 THEN 1 ELSE 0 END,
                 active = CASE WHEN $1 IS NULL THEN 0 ELSE active END
             WHERE id = $4 AND next_run_at = $5 AND active = 1",
        )
        .bind(next)
        .bind(fired)
        .bind(now)
        .bind(id)
        .bind(due_ms)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn session_schedules(
        &self,
        session_id: &str,
    ) -> Result<Vec<ScheduleRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM schedules WHERE session_id = $1 AND active = 1 ORDER BY next_run_at"
        ))
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(schedule_from_row).collect()
    }

    /// Stops one of the session's schedules (by id or a prefix of 6+ chars).
    pub async fn cancel_schedule(&self, session_id: &str, id: &str) -> Result<bool, StoreError> {
        if id.len() < 6 {
            return Ok(false);
        }
        let done = sqlx::query(
            "UPDATE schedules SET active = 0 WHERE session_id = $1 AND id LIKE $2 AND active = 1",
        )
        .bind(session_id)
        .bind(format!("{}%", id.replace(['%', '_'], "")))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

fn schedule_from_row(r: &sqlx::any::AnyRow) -> Result<ScheduleRecord, StoreError> {
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
