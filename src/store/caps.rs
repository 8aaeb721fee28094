//! Per-user caps counted in the database: a background task or a schedule is
//! inserted only while the user's count across all their sessions (every chat,
//! topic and platform thread) is under the cap, in one write transaction — on
//! PostgreSQL under a per-user advisory lock, so several gateway processes
//! cannot each see room for the last place at once.

use super::{Backend, ScheduleRecord, Schedules, Store, StoreError, TaskRecord, Tasks};
use crate::domain::ProcessId;
use switchboard_platform::{Platform, UserId};

/// Whether a capped insert happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// The user already has this many (at or over the cap); nothing was inserted.
    Full(usize),
}

/// Unfinished background tasks of the user, across their sessions.
const COUNT_TASKS: &str = "SELECT COUNT(*) FROM tasks t JOIN sessions s ON s.id = t.session_id
     WHERE s.platform = $1 AND s.user_id = $2 AND t.finished_at IS NULL";

/// Active schedules of the user, across their sessions.
const COUNT_SCHEDULES: &str =
    "SELECT COUNT(*) FROM schedules c JOIN sessions s ON s.id = c.session_id
     WHERE s.platform = $1 AND s.user_id = $2 AND c.active = 1";

impl Tasks<'_> {
    /// Inserts `task` unless `user` already has `cap` unfinished tasks.
    pub async fn insert_within_cap(
        self,
        task: &TaskRecord,
        owner: &ProcessId,
        platform: Platform,
        user: UserId,
        cap: usize,
    ) -> Result<Admission, StoreError> {
        let mut tx = begin_capped(self.db, platform, user, "tasks").await?;
        let held = count(&mut tx, COUNT_TASKS, platform, user).await?;
        if held >= cap {
            return Ok(Admission::Full(held));
        }
        super::tasks::insert_task_query(task, Some(owner))?
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Admission::Admitted)
    }
}

impl Schedules<'_> {
    /// Inserts `schedule` unless `user` already has `cap` active schedules.
    pub async fn insert_within_cap(
        self,
        schedule: &ScheduleRecord,
        platform: Platform,
        user: UserId,
        cap: usize,
    ) -> Result<Admission, StoreError> {
        let mut tx = begin_capped(self.db, platform, user, "schedules").await?;
        let held = count(&mut tx, COUNT_SCHEDULES, platform, user).await?;
        if held >= cap {
            return Ok(Admission::Full(held));
        }
        super::schedules::insert_schedule_query(schedule)?
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Admission::Admitted)
    }
}

/// A write transaction that no other capped insert of `user` for `what`
/// runs beside: SQLite has one writer (`BEGIN IMMEDIATE`); PostgreSQL
/// takes a transaction-scoped advisory lock on the user and `what`.
async fn begin_capped(
    db: &Store,
    platform: Platform,
    user: UserId,
    what: &str,
) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
    let mut tx = db.begin_write().await?;
    if db.backend == Backend::Postgres {
        let key = lock_key(&format!("cap:{what}:{}:{}", platform.as_str(), user.0));
        sqlx::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock($1)) AS locked")
            .bind(key)
            .execute(&mut *tx)
            .await?;
    }
    Ok(tx)
}

async fn count(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    sql: &str,
    platform: Platform,
    user: UserId,
) -> Result<usize, StoreError> {
    let n: i64 = sqlx::query_scalar(sql)
        .bind(platform.as_str())
        .bind(user.0)
        .fetch_one(&mut **tx)
        .await?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// A stable 64-bit key (FNV-1a) for an advisory lock: the same in every
/// process, whatever its build.
fn lock_key(name: &str) -> i64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    i64::from_ne_bytes(hash.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_are_stable_and_distinct() {
        assert_eq!(
            lock_key("cap:tasks:telegram:1"),
            lock_key("cap:tasks:telegram:1")
        );
        assert_ne!(
            lock_key("cap:tasks:telegram:1"),
            lock_key("cap:tasks:telegram:2")
        );
        assert_ne!(
            lock_key("cap:tasks:telegram:1"),
            lock_key("cap:schedules:telegram:1")
        );
    }
}
