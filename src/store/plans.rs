//! The planner's plans, one per session (`store.plans()`): read (a plan kept
//! in the session's execution state by earlier versions moves here on its
//! first read), written after each change, deleted by `/clear`.

use super::{now, Store, StoreError};
use crate::domain::plan::Plan;
use crate::domain::SessionId;
use sqlx::Row;

/// The sessions' plans (`store.plans()`).
#[derive(Debug, Clone, Copy)]
pub struct Plans<'a> {
    pub(super) db: &'a Store,
}

fn parse(body: &str) -> Result<Plan, StoreError> {
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("plan: {e}")))
}

impl Plans<'_> {
    /// The session's plan (open or closed), if it has one.
    pub async fn of_session(&self, session: &SessionId) -> Result<Option<Plan>, StoreError> {
        let row = sqlx::query("SELECT body FROM plans WHERE session_id = $1")
            .bind(session)
            .fetch_optional(&self.db.pool)
            .await?;
        match row {
            Some(row) => parse(&row.try_get::<String, _>("body")?).map(Some),
            None => self.move_legacy(session).await,
        }
    }

    /// Stores the session's plan, replacing the one it had.
    pub async fn save(&self, session: &SessionId, plan: &Plan) -> Result<(), StoreError> {
        let body =
            serde_json::to_string(plan).map_err(|e| StoreError::Corrupt(format!("plan: {e}")))?;
        let at = now();
        sqlx::query(
            "INSERT INTO plans (session_id, goal, phase, revision, body, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6)
             ON CONFLICT (session_id) DO UPDATE SET goal = excluded.goal, phase = excluded.phase,
               revision = excluded.revision, body = excluded.body, updated_at = excluded.updated_at",
        )
        .bind(session)
        .bind(&plan.goal)
        .bind(plan.phase.as_str())
        .bind(i64::from(plan.revision))
        .bind(&body)
        .bind(at)
        .execute(&self.db.pool)
        .await?;
        Ok(())
    }

    /// Forgets the session's plan; `true` when it had one.
    pub async fn delete(&self, session: &SessionId) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM plans WHERE session_id = $1")
            .bind(session)
            .execute(&self.db.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Moves a plan kept inside the execution state (before plans had a
    /// table) to the table, and takes it out of that document: once, in
    /// one transaction.
    async fn move_legacy(&self, session: &SessionId) -> Result<Option<Plan>, StoreError> {
        // A plain read first: the write transaction only for a document
        // that may hold a plan (most sessions have none).
        let maybe = sqlx::query(
            "SELECT 1 AS one FROM session_state WHERE session_id = $1 AND execution_state LIKE '%\"plan\":%'",
        )
        .bind(session)
        .fetch_optional(&self.db.pool)
        .await?;
        if maybe.is_none() {
            return Ok(None);
        }
        let mut tx = self.db.begin_write().await?;
        let row = sqlx::query(
            "SELECT execution_state FROM session_state WHERE session_id = $1 AND execution_state IS NOT NULL",
        )
        .bind(session)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let doc: String = row.try_get("execution_state")?;
        let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&doc) else {
            return Ok(None);
        };
        let Some(plan) = Plan::from_legacy(&value) else {
            return Ok(None);
        };
        if let Some(map) = value.as_object_mut() {
            map.remove("plan");
        }
        let body =
            serde_json::to_string(&plan).map_err(|e| StoreError::Corrupt(format!("plan: {e}")))?;
        let at = now();
        sqlx::query(
            "INSERT INTO plans (session_id, goal, phase, revision, body, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (session_id) DO NOTHING",
        )
        .bind(session)
        .bind(&plan.goal)
        .bind(plan.phase.as_str())
        .bind(i64::from(plan.revision))
        .bind(&body)
        .bind(at)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "UPDATE session_state SET execution_state = $2, updated_at = $3 WHERE session_id = $1",
        )
        .bind(session)
        .bind(value.to_string())
        .bind(at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(plan))
    }
}
