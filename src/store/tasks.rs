//! Background task rows: status, progress and results.

use super::{dt, ms, now, Store, StoreError};
use crate::domain::{ProcessId, SessionId, TaskId};
use chrono::{DateTime, Utc};
use sqlx::Row;
use switchboard_platform::{ChatAddress, MessageId};

/// Background tasks: their rows, progress and results (`store.tasks()`).
#[derive(Debug, Clone, Copy)]
pub struct Tasks<'a> {
    pub(super) db: &'a Store,
}

/// Who hears about a background task, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskNotify {
    /// Progress by edits of one status message; the agent is told when it
    /// ends and answers in the chat.
    #[default]
    Done,
    /// As `Done`, and each new stage or quarter of progress is posted as its
    /// own message (edits do not ping people; new messages do).
    Changes,
    /// No status message and no answer when it ends; the result waits for
    /// `check_background_tasks` and `/tasks`.
    Silent,
}

impl TaskNotify {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskNotify::Done => "done",
            TaskNotify::Changes => "changes",
            TaskNotify::Silent => "silent",
        }
    }

    pub fn parse(s: &str) -> Option<TaskNotify> {
        match s {
            "done" => Some(TaskNotify::Done),
            "changes" => Some(TaskNotify::Changes),
            "silent" => Some(TaskNotify::Silent),
            _ => None,
        }
    }
}

/// Lifecycle of a background task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    /// Was running when its process died.
    Interrupted,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Succeeded => "succeeded",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => TaskStatus::Queued,
            "running" => TaskStatus::Running,
            "succeeded" => TaskStatus::Succeeded,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            "interrupted" => TaskStatus::Interrupted,
            _ => return None,
        })
    }

    pub fn is_finished(self) -> bool {
        !matches!(self, TaskStatus::Queued | TaskStatus::Running)
    }
}

/// One background task as stored.
#[derive(Debug, Clone)]
pub struct TaskRecord {
    pub id: TaskId,
    pub session_id: SessionId,
    pub tool_name: String,
    pub arguments: String,
    pub status: TaskStatus,
    pub stage: String,
    pub detail: String,
    pub percent: Option<u8>,
    pub result: Option<String>,
    pub chat: ChatAddress,
    pub status_message: Option<MessageId>,
    pub notify: TaskNotify,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

pub(super) const COLUMNS: &str = "id, session_id, tool_name, arguments, status, stage, detail, percent, result, chat, status_message_id,
    notify, created_at, finished_at";

impl Tasks<'_> {
    /// Records a task run by no process (listings, imports); the next
    /// take-over marks it interrupted if it is unfinished.
    pub async fn insert(self, t: &TaskRecord) -> Result<(), StoreError> {
        insert_task_query(t, None)?.execute(&self.db.pool).await?;
        Ok(())
    }

    pub async fn update_progress(
        self,
        id: &TaskId,
        status: TaskStatus,
        stage: &str,
        detail: &str,
        percent: Option<u8>,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE tasks SET status = $1, stage = $2, detail = $3, percent = $4 WHERE id = $5 AND finished_at IS NULL")
            .bind(status.as_str())
            .bind(stage)
            .bind(detail)
            .bind(percent.map(i64::from))
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    pub async fn set_status_message(
        self,
        id: &TaskId,
        message: MessageId,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE tasks SET status_message_id = $1 WHERE id = $2")
            .bind(message.0)
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }

    /// Marks a task finished unless it already is. Returns whether this call
    /// finished it. Its stage becomes the final status and its detail is
    /// cleared (the last progress line is stale); a success is at 100 %, any
    /// other end keeps the percentage it reached.
    pub async fn finish(
        self,
        id: &TaskId,
        status: TaskStatus,
        result: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            // An `interrupted` row may still be finished by its runner: another
            // process judged it dead while its lease lapsed in an outage.
            "UPDATE tasks SET status = $1, result = $2, finished_at = $3,
                 stage = $1, detail = '', percent = COALESCE($5, percent)
             WHERE id = $4 AND (finished_at IS NULL OR status = 'interrupted')",
        )
        .bind(status.as_str())
        .bind(result)
        .bind(now())
        .bind(id)
        .bind((status == TaskStatus::Succeeded).then_some(100_i64))
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Asks whichever process runs the task to stop it (see
    /// [`Store::cancel_requested_tasks`]). Returns whether the task is unfinished.
    pub async fn request_cancel(self, id: &TaskId) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE tasks SET cancel_requested_at = COALESCE(cancel_requested_at, $1)
             WHERE id = $2 AND finished_at IS NULL",
        )
        .bind(now())
        .bind(id)
        .execute(&self.db.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Unfinished tasks someone asked to cancel; one read of the unfinished
    /// tasks' index.
    pub async fn cancel_requested(self) -> Result<Vec<TaskId>, StoreError> {
        let ids = sqlx::query_scalar(
            "SELECT id FROM tasks WHERE finished_at IS NULL AND cancel_requested_at IS NOT NULL",
        )
        .fetch_all(&self.db.pool)
        .await?;
        Ok(ids)
    }

    /// Marks the unfinished tasks of the `gone` processes — and those no
    /// process owns — as interrupted and returns them, once: the update is
    /// conditional. `alive` are the caller's own tasks, spared whatever
    /// their row says.
    pub async fn interrupt_orphaned(
        self,
        gone: &[ProcessId],
        alive: &[TaskId],
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let mut next = 2;
        let mut placeholders = |n: usize| {
            let p: Vec<String> = (0..n).map(|i| format!("${}", next + i)).collect();
            next += n;
            p.join(", ")
        };
        let owners = if gone.is_empty() {
            String::new()
        } else {
            format!(" OR owner IN ({})", placeholders(gone.len()))
        };
        let spared = if alive.is_empty() {
            String::new()
        } else {
            format!(" AND id NOT IN ({})", placeholders(alive.len()))
        };
        let sql = format!(
            "UPDATE tasks SET status = 'interrupted', finished_at = $1,
                 result = 'interrupted: the gateway process running it stopped',
                 stage = 'interrupted', detail = ''
             WHERE finished_at IS NULL AND (owner IS NULL{owners}){spared}
             RETURNING {COLUMNS}"
        );
        let mut query = sqlx::query(&sql).bind(now());
        for owner in gone {
            query = query.bind(owner);
        }
        for id in alive {
            query = query.bind(id);
        }
        let rows = query.fetch_all(&self.db.pool).await?;
        rows.iter().map(task_from_row).collect()
    }

    pub async fn get(self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM tasks WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?;
        row.as_ref().map(task_from_row).transpose()
    }

    /// A session's most recent tasks, newest first.
    pub async fn of_session(
        self,
        session_id: &SessionId,
        limit: u32,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE session_id = $1 ORDER BY created_at DESC LIMIT $2"
        ))
        .bind(session_id)
        .bind(i64::from(limit))
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter().map(task_from_row).collect()
    }

    /// The most recent tasks of every session (optionally of one status),
    /// newest first, for the operator.
    pub async fn recent(
        self,
        status: Option<TaskStatus>,
        limit: u32,
    ) -> Result<Vec<TaskRecord>, StoreError> {
        let rows = match status {
            Some(status) => {
                sqlx::query(&format!(
                "SELECT {COLUMNS} FROM tasks WHERE status = $1 ORDER BY created_at DESC LIMIT $2"
            ))
                .bind(status.as_str())
                .bind(i64::from(limit))
                .fetch_all(&self.db.pool)
                .await?
            }
            None => {
                sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM tasks ORDER BY created_at DESC LIMIT $1"
                ))
                .bind(i64::from(limit))
                .fetch_all(&self.db.pool)
                .await?
            }
        };
        rows.iter().map(task_from_row).collect()
    }
}

pub(super) fn task_from_row(r: &sqlx::any::AnyRow) -> Result<TaskRecord, StoreError> {
    let status: String = r.try_get("status")?;
    let chat: String = r.try_get("chat")?;
    Ok(TaskRecord {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        tool_name: r.try_get("tool_name")?,
        arguments: r.try_get("arguments")?,
        status: TaskStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("task status {status}")))?,
        stage: r.try_get("stage")?,
        detail: r.try_get("detail")?,
        percent: r
            .try_get::<Option<i64>, _>("percent")?
            .and_then(|p| u8::try_from(p).ok()),
        result: r.try_get("result")?,
        chat: serde_json::from_str(&chat)
            .map_err(|e| StoreError::Corrupt(format!("task chat: {e}")))?,
        status_message: r
            .try_get::<Option<i64>, _>("status_message_id")?
            .map(MessageId),
        notify: {
            let notify: String = r.try_get("notify")?;
            TaskNotify::parse(&notify)
                .ok_or_else(|| StoreError::Corrupt(format!("task notify {notify}")))?
        },
        created_at: dt(r.try_get("created_at")?),
        finished_at: r.try_get::<Option<i64>, _>("finished_at")?.map(dt),
    })
}

/// The insert of a new task row (also run inside a capped transaction).
pub(super) fn insert_task_query(
    t: &TaskRecord,
    owner: Option<&ProcessId>,
) -> Result<sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments<'static>>, StoreError> {
    let chat = serde_json::to_string(&t.chat).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(sqlx::query(
        "INSERT INTO tasks (id, session_id, tool_name, arguments, status, chat, created_at, notify, lease_until, owner)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(t.id.clone())
    .bind(t.session_id.clone())
    .bind(t.tool_name.clone())
    .bind(t.arguments.clone())
    .bind(t.status.as_str())
    .bind(chat)
    .bind(ms(t.created_at))
    .bind(t.notify.as_str())
    // Never lapsing for an earlier version reading leases.
    .bind(i64::MAX / 4)
    .bind(owner.cloned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::{ChatId, Platform};

    fn task(id: &str) -> TaskRecord {
        TaskRecord {
            id: id.parse().unwrap(),
            session_id: "s".parse().unwrap(),
            tool_name: "slow".into(),
            arguments: "{}".into(),
            status: TaskStatus::Running,
            stage: String::new(),
            detail: String::new(),
            percent: None,
            result: None,
            chat: ChatAddress {
                platform: Platform::Console,
                chat: ChatId(1),
                thread: None,
            },
            status_message: None,
            notify: TaskNotify::Done,
            created_at: Utc::now(),
            finished_at: None,
        }
    }

    #[tokio::test]
    async fn tasks_of_gone_processes_are_interrupted_once_and_live_ones_spared() {
        let (store, _dir) = test_store().await;
        for (id, owner) in [("mine", "me"), ("theirs", "dead"), ("peer", "alive")] {
            insert_task_query(&task(id), Some(&ProcessId::named(owner)))
                .unwrap()
                .execute(&store.pool)
                .await
                .unwrap();
        }
        store.tasks().insert(&task("nobody")).await.unwrap();
        let interrupted = store
            .tasks()
            .interrupt_orphaned(
                &[ProcessId::named("dead"), ProcessId::named("me")],
                &["mine".parse().unwrap()],
            )
            .await
            .unwrap();
        let mut ids: Vec<_> = interrupted.iter().map(|t| t.id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["nobody", "theirs"]);
        assert!(store
            .tasks()
            .interrupt_orphaned(&[ProcessId::named("dead")], &[])
            .await
            .unwrap()
            .is_empty());
        let peer = store
            .tasks()
            .get(&"peer".parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(peer.status, TaskStatus::Running);
    }

    #[tokio::test]
    async fn the_runner_of_a_task_judged_interrupted_still_records_its_result() {
        let (store, _dir) = test_store().await;
        store.tasks().insert(&task("t")).await.unwrap();
        assert_eq!(
            store
                .tasks()
                .interrupt_orphaned(&[], &[])
                .await
                .unwrap()
                .len(),
            1
        );
        assert!(store
            .tasks()
            .finish(
                &"t".parse().unwrap(),
                TaskStatus::Succeeded,
                "done after all"
            )
            .await
            .unwrap());
        let t = store
            .tasks()
            .get(&"t".parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(t.status, TaskStatus::Succeeded);
        assert_eq!(t.result.as_deref(), Some("done after all"));
        assert!(
            !store
                .tasks()
                .finish(&"t".parse().unwrap(), TaskStatus::Failed, "again")
                .await
                .unwrap(),
            "a finished task stays finished"
        );
    }
    #[tokio::test]
    async fn a_finished_task_keeps_its_final_stage_not_its_last_progress() {
        let (store, _dir) = test_store().await;
        for id in ["ok", "stopped"] {
            store.tasks().insert(&task(id)).await.unwrap();
            store
                .tasks()
                .update_progress(
                    &id.parse().unwrap(),
                    TaskStatus::Running,
                    "running",
                    "step 2 of 3",
                    Some(66),
                )
                .await
                .unwrap();
        }
        store
            .tasks()
            .finish(&"ok".parse().unwrap(), TaskStatus::Succeeded, "done")
            .await
            .unwrap();
        store
            .tasks()
            .finish(
                &"stopped".parse().unwrap(),
                TaskStatus::Cancelled,
                "cancelled",
            )
            .await
            .unwrap();
        let ok = store
            .tasks()
            .get(&"ok".parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (ok.stage.as_str(), ok.detail.as_str(), ok.percent),
            ("succeeded", "", Some(100))
        );
        let stopped = store
            .tasks()
            .get(&"stopped".parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                stopped.stage.as_str(),
                stopped.detail.as_str(),
                stopped.percent
            ),
            ("cancelled", "", Some(66)),
            "a task stopped early keeps the percentage it reached"
        );
    }
}
