//! The web console's bounded lists of tasks, schedules, rules, users,
//! memories and usage (see `console.rs` for the rest).

use super::access::platform_of;
use super::console::{window, Slice};
use super::memories::{record as memory_from_row, COLUMNS as MEMORY_COLUMNS};
use super::schedules::{schedule_from_row, COLUMNS as SCHEDULE_COLUMNS};
use super::tasks::{task_from_row, COLUMNS as TASK_COLUMNS};
use super::{
    dt, ms, AdmittedUser, ApprovalRule, MemoryOwner, MemoryRecord, ScheduleRecord, Store,
    StoreError, TaskRecord,
};
use crate::domain::ScheduleId;
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::UserId;

/// One user's usage on one day (`day` is `YYYY-MM-DD`, UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageDay {
    pub owner: MemoryOwner,
    pub day: String,
    pub turns: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Estimated cost in micro-dollars, priced per model when recorded.
    pub cost_micros: i64,
}

/// A memory with its owner, for the operator.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedMemory {
    pub owner: MemoryOwner,
    pub memory: MemoryRecord,
}

impl Store {
    /// Tasks newest first: the unfinished ones (`running`) or the finished.
    pub async fn tasks_page(
        &self,
        running: bool,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<TaskRecord>, StoreError> {
        let (take, skip) = window(limit, offset);
        let which = if running {
            "finished_at IS NULL"
        } else {
            "finished_at IS NOT NULL"
        };
        let rows = sqlx::query(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE {which} ORDER BY created_at DESC, id LIMIT $1 OFFSET $2"
        ))
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, task_from_row)
    }

    /// Active schedules, next to fire first.
    pub async fn schedules_page(
        &self,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<ScheduleRecord>, StoreError> {
        let (take, skip) = window(limit, offset);
        let rows = sqlx::query(&format!(
            "SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE active = 1 ORDER BY next_run_at, id LIMIT $1 OFFSET $2"
        ))
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, schedule_from_row)
    }

    /// One schedule by its full id.
    pub async fn schedule(&self, id: &ScheduleId) -> Result<Option<ScheduleRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    /// "Always" rules, oldest first.
    pub async fn rules_page(
        &self,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<ApprovalRule>, StoreError> {
        let (take, skip) = window(limit, offset);
        let rows = sqlx::query(
            "SELECT id, platform, user_id, tool_name, pattern FROM approval_rules
             ORDER BY created_at, id LIMIT $1 OFFSET $2",
        )
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, |r| {
            Ok(ApprovalRule {
                id: r.try_get("id")?,
                platform: platform_of(r)?,
                user: UserId(r.try_get("user_id")?),
                tool_name: r.try_get("tool_name")?,
                pattern: r.try_get("pattern")?,
            })
        })
    }

    /// Admitted users, oldest admission first.
    pub async fn users_page(
        &self,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<AdmittedUser>, StoreError> {
        let (take, skip) = window(limit, offset);
        let rows = sqlx::query(
            "SELECT platform, user_id, display_name, admitted_at, admitted_by FROM users
             ORDER BY admitted_at, platform, user_id LIMIT $1 OFFSET $2",
        )
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, |row| {
            Ok(AdmittedUser {
                platform: platform_of(row)?,
                user: UserId(row.try_get("user_id")?),
                display_name: row.try_get("display_name")?,
                admitted_at: dt(row.try_get("admitted_at")?),
                admitted_by: row.try_get("admitted_by")?,
            })
        })
    }

    /// Live memories of every user, newest first.
    pub async fn memories_page(
        &self,
        at: DateTime<Utc>,
        limit: u32,
        offset: u64,
    ) -> Result<Slice<OwnedMemory>, StoreError> {
        let (take, skip) = window(limit, offset);
        let rows = sqlx::query(&format!(
            "SELECT {MEMORY_COLUMNS}, m.platform, m.user_id FROM memories m
             WHERE m.expires_at IS NULL OR m.expires_at > $1
             ORDER BY m.updated_at DESC, m.id DESC LIMIT $2 OFFSET $3"
        ))
        .bind(ms(at))
        .bind(take)
        .bind(skip)
        .fetch_all(&self.pool)
        .await?;
        Slice::from_rows(&rows, limit, |r| {
            Ok(OwnedMemory {
                owner: MemoryOwner::new(platform_of(r)?, UserId(r.try_get("user_id")?)),
                memory: memory_from_row(r)?,
            })
        })
    }

    /// Usage per user per day from `since_day` (`YYYY-MM-DD`) on, at most
    /// `limit` rows, newest day first.
    pub async fn usage_since(
        &self,
        since_day: &str,
        limit: u32,
    ) -> Result<Vec<UsageDay>, StoreError> {
        let rows = sqlx::query(
            "SELECT platform, user_id, day, turns, input_tokens, output_tokens,
               COALESCE((SELECT CAST(SUM(m.cost_micros) AS BIGINT) FROM usage_models m
                         WHERE m.platform = usage.platform AND m.user_id = usage.user_id AND m.day = usage.day), 0) AS cost_micros
             FROM usage WHERE day >= $1 ORDER BY day DESC, platform, user_id LIMIT $2",
        )
        .bind(since_day)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(UsageDay {
                    owner: MemoryOwner::new(platform_of(r)?, UserId(r.try_get("user_id")?)),
                    day: r.try_get("day")?,
                    turns: r.try_get("turns")?,
                    input_tokens: r.try_get("input_tokens")?,
                    output_tokens: r.try_get("output_tokens")?,
                    cost_micros: r.try_get("cost_micros")?,
                })
            })
            .collect()
    }
}
