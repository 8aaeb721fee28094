//! Background tasks: run a tool on its own task, show progress by editing one
//! status message, record the outcome, and hand the result back to the gateway
//! as a system notification for the originating session.

mod admission;
mod firing;
mod notice;
mod progress;
mod reporter;

mod slots;
mod tools;

pub use crate::domain::schedule::{first_occurrence, next_occurrence, ScheduleError};
pub use admission::StartError;
pub use firing::{fire_due_schedules, Fired};
pub use notice::{notification_text, scheduled_text};
pub use tools::{CancelTaskTool, ScheduleTool};

use crate::busy::{Busy, BusyGuard};
use crate::domain::{Conversation, ScheduleId, SessionId, TaskId};
use crate::llm::ToolCall;
use crate::store::{Store, StoreError, TaskNotify, TaskRecord, TaskStatus};
use crate::tools::{ImageSink, Progress, ProgressSink, Tool, ToolContext};
use reporter::{record_result, report_progress};
use serde_json::{json, Value};
use slots::{Slot, Slots};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use switchboard_platform::{MessageRef, OutgoingMessage, PlatformAdapter};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

/// Where a task came from; its notification goes back there.
#[derive(Clone)]
pub struct TaskOrigin {
    pub session_id: SessionId,
    /// Who started it, where (a notification replies to no message).
    pub conversation: Conversation,
    pub adapter: Arc<dyn PlatformAdapter>,
}

/// A finished task, for the gateway to inject into the session.
pub struct TaskFinished {
    pub task_id: TaskId,
    pub tool_name: String,
    pub status: TaskStatus,
    pub result: String,
    pub origin: TaskOrigin,
    /// Keeps the gateway "busy" until the notification is queued.
    pub guard: BusyGuard,
}

/// What cancelling by id (or a 6+ character prefix) in a conversation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancelled {
    /// A running task of the conversation: it is being stopped.
    Task(TaskId),
    /// A task of the conversation that another gateway process runs: that
    /// process was asked to stop it and does so within a few seconds.
    Requested(TaskId),
    /// A task of the conversation that is not running (any more).
    NotRunning(TaskId, TaskStatus),
    /// An active schedule of the conversation, now stopped.
    Schedule(ScheduleId),
    /// Nothing of this conversation has that id.
    NotFound,
}

/// A started task and what it needs to run and report.
struct Job {
    id: TaskId,
    short: String,
    tool_name: String,
    tool: Arc<dyn Tool>,
    args: Value,
    origin: TaskOrigin,
    notify: TaskNotify,
    cancel: CancellationToken,
    /// Keeps the gateway "busy" until the notification is queued.
    guard: BusyGuard,
}

/// Background tasks a conversation runs at once by default
/// (`MAX_BACKGROUND_TASKS`); more wait in line as `queued`.
pub const DEFAULT_TASKS_PER_SESSION: usize = 3;

/// Starts and tracks background tasks.
pub struct TaskManager {
    store: Store,
    finished: mpsc::Sender<TaskFinished>,
    running: Mutex<HashMap<TaskId, CancellationToken>>,
    slots: Slots,
    /// Unfinished tasks one user may have across all chats (`MAX_TASKS_PER_USER`).
    per_user: usize,
    shutdown: CancellationToken,
    busy: Busy,
    /// This process's id: the owner recorded on the tasks it runs.
    owner: crate::domain::ProcessId,
}

impl TaskManager {
    pub fn new(
        store: Store,
        finished: mpsc::Sender<TaskFinished>,
        shutdown: CancellationToken,
        busy: Busy,
        per_session: usize,
        per_user: usize,
        owner: crate::domain::ProcessId,
    ) -> Arc<TaskManager> {
        Arc::new(TaskManager {
            owner,
            store,
            finished,
            running: Mutex::new(HashMap::new()),
            slots: Slots::new(per_session),
            per_user: per_user.max(1),
            shutdown,
            busy,
        })
    }

    /// Records the task and starts it, or queues it behind the conversation's
    /// running tasks; returns the task id at once. The call's optional
    /// `notify` argument (`done`, `changes`, `silent`) sets who hears about it.
    /// Refused, and nothing recorded, when the user is at `MAX_TASKS_PER_USER`.
    pub async fn start(
        self: &Arc<Self>,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        args: Value,
        origin: TaskOrigin,
    ) -> Result<TaskId, StartError> {
        let notify = args
            .get("notify")
            .and_then(Value::as_str)
            .and_then(TaskNotify::parse)
            .unwrap_or_default();
        let id = TaskId::new();
        let slot = self.slots.take(&origin.session_id);
        let status = match slot {
            Slot::Running(_) => TaskStatus::Running,
            Slot::Queued(_) => TaskStatus::Queued,
        };
        let record = TaskRecord {
            id: id.clone(),
            session_id: origin.session_id.clone(),
            tool_name: call.name.clone(),
            arguments: args.to_string(),
            status,
            stage: String::new(),
            detail: String::new(),
            percent: None,
            result: None,
            chat: origin.conversation.chat,
            status_message: None,
            notify,
            created_at: chrono::Utc::now(),
            finished_at: None,
        };
        if let Err(e) =
            admission::admit(&self.store, &record, &self.owner, &origin, self.per_user).await
        {
            drop(slot);
            self.slots.release(&origin.session_id);
            return Err(e);
        }
        self.store
            .audit()
            .record(
                "task.started",
                json!({ "id": id, "tool": call.name, "status": status.as_str() }),
            )
            .await;
        let cancel = self.shutdown.child_token();
        self.running_lock().insert(id.clone(), cancel.clone());
        let job = Job {
            id: id.clone(),
            short: id.short().to_owned(),
            tool_name: call.name.clone(),
            tool,
            args,
            origin,
            notify,
            cancel,
            guard: self.busy.enter(),
        };
        let manager = Arc::clone(self);
        tokio::spawn(async move { manager.run(job, slot).await });
        Ok(id)
    }

    /// Cancels a running task of the given session. Returns whether it was running.
    pub fn cancel(&self, task_id: &TaskId) -> bool {
        match self.running_lock().get(task_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels the conversation's task or schedule named by `prefix` (its id
    /// or a prefix of at least 6 characters). Nothing of another conversation
    /// is reachable.
    pub async fn cancel_in_session(
        &self,
        session_id: &SessionId,
        prefix: &str,
    ) -> Result<Cancelled, StoreError> {
        let prefix = prefix.trim().to_ascii_lowercase();
        if prefix.len() < 6 {
            return Ok(Cancelled::NotFound);
        }
        let tasks = self.store.tasks().of_session(session_id, 100).await?;
        if let Some(task) = tasks.iter().find(|t| t.id.as_str().starts_with(&prefix)) {
            return Ok(if self.cancel(&task.id) {
                Cancelled::Task(task.id.clone())
            } else if !task.status.is_finished()
                && self.store.tasks().request_cancel(&task.id).await?
            {
                Cancelled::Requested(task.id.clone())
            } else {
                Cancelled::NotRunning(task.id.clone(), task.status)
            });
        }
        Ok(
            match self.store.schedules().cancel(session_id, &prefix).await? {
                Some(full) => Cancelled::Schedule(full),
                None => Cancelled::NotFound,
            },
        )
    }

    /// Cancels every unfinished task of the session (`/stop all`): those of
    /// this process at once, those of another process by request. Schedules
    /// stay. Returns how many were stopped or asked to stop.
    pub async fn cancel_all_in_session(&self, session_id: &SessionId) -> Result<usize, StoreError> {
        let mut stopped = 0;
        for task in self.store.tasks().of_session(session_id, 1000).await? {
            if task.status.is_finished() {
                continue;
            }
            if self.cancel(&task.id) || self.store.tasks().request_cancel(&task.id).await? {
                stopped += 1;
            }
        }
        Ok(stopped)
    }

    /// Stops the tasks of this process that another process was asked to
    /// cancel. Costs nothing while this process runs no task.
    pub async fn apply_cancel_requests(&self) -> Result<(), StoreError> {
        if self.running_lock().is_empty() {
            return Ok(());
        }
        for id in self.store.tasks().cancel_requested().await? {
            if self.cancel(&id) {
                tracing::info!(task = %id, "task cancelled at another process's request");
            }
        }
        Ok(())
    }

    async fn run(self: Arc<Self>, job: Job, slot: Slot) {
        let status_ref = match job.notify {
            TaskNotify::Silent => None,
            TaskNotify::Done | TaskNotify::Changes => {
                let status = match slot {
                    Slot::Running(_) => TaskStatus::Running,
                    Slot::Queued(_) => TaskStatus::Queued,
                };
                self.post_status(&job, status).await
            }
        };
        let (status, result, last_progress, started, permit) =
            match self.wait_for_slot(&job, slot, status_ref.as_ref()).await {
                Some(permit) => {
                    let started = Instant::now();
                    let (status, result, progress) = self.execute(&job, status_ref).await;
                    (status, result, progress, started, Some(permit))
                }
                None => {
                    let (status, result) = self.stopped_outcome();
                    (status, result, Progress::default(), Instant::now(), None)
                }
            };
        record_result(&self.store, &self.shutdown, &job.id, status, &result).await;
        self.running_lock().remove(&job.id);
        // The next queued task starts once this one's row says it ended.
        drop(permit);
        self.slots.release(&job.origin.session_id);
        self.store
            .audit()
            .record(
                "task.finished",
                json!({ "id": job.id, "status": status.as_str() }),
            )
            .await;
        if let Some(msg) = status_ref {
            let text = progress::status_text(
                &job.short,
                &job.tool_name,
                status,
                &last_progress,
                started.elapsed(),
            );
            if let Err(e) = job
                .origin
                .adapter
                .edit(&msg, OutgoingMessage::text(text))
                .await
            {
                tracing::warn!(error = %e, "could not finalize a task status message");
            }
        }
        if status == TaskStatus::Interrupted || job.notify == TaskNotify::Silent {
            return;
        }
        let finished = TaskFinished {
            task_id: job.id,
            tool_name: job.tool_name,
            status,
            result: notice::result_for_model(&result),
            origin: job.origin,
            guard: job.guard,
        };
        if self.finished.send(finished).await.is_err() {
            tracing::warn!("gateway gone; task notification dropped");
        }
    }

    /// The running slot, at once or after waiting in the conversation's line;
    /// `None` when the task was cancelled (or the gateway stopped) meanwhile.
    async fn wait_for_slot(
        &self,
        job: &Job,
        slot: Slot,
        status_ref: Option<&MessageRef>,
    ) -> Option<OwnedSemaphorePermit> {
        let line = match slot {
            Slot::Running(permit) => return Some(permit),
            Slot::Queued(line) => line,
        };
        let permit = tokio::select! {
            permit = line.acquire_owned() => permit.ok()?,
            () = job.cancel.cancelled() => return None,
        };
        if let Err(e) = self
            .store
            .tasks()
            .update_progress(&job.id, TaskStatus::Running, "", "", None)
            .await
        {
            tracing::warn!(error = %e, task = %job.id, "could not mark a queued task running");
        }
        if let Some(msg) = status_ref {
            let text = progress::status_text(
                &job.short,
                &job.tool_name,
                TaskStatus::Running,
                &Progress::default(),
                Duration::ZERO,
            );
            if let Err(e) = job
                .origin
                .adapter
                .edit(msg, OutgoingMessage::text(text))
                .await
            {
                tracing::debug!(error = %e, "could not mark a task status message running");
            }
        }
        Some(permit)
    }

    /// Why a task ends without its tool having run to completion on its own.
    fn stopped_outcome(&self) -> (TaskStatus, String) {
        if self.shutdown.is_cancelled() {
            (TaskStatus::Interrupted, "the gateway stopped".to_owned())
        } else {
            (TaskStatus::Cancelled, "cancelled".to_owned())
        }
    }

    /// Runs the tool with progress mirrored to the row and the status message.
    async fn execute(
        &self,
        job: &Job,
        status_ref: Option<MessageRef>,
    ) -> (TaskStatus, String, Progress) {
        let started = Instant::now();
        let (tx, rx) = watch::channel(Progress::default());
        let ctx = ToolContext {
            cancel: job.cancel.clone(),
            progress: ProgressSink::new(tx),
            // A background result arrives as a notification: text only.
            images: ImageSink::default(),
            session_id: job.origin.session_id.clone(),
            origin: Some(job.origin.conversation.clone()),
            approvals: None,
            resumed: None,
            asked: None,
        };
        let progress_done = CancellationToken::new();
        let reporter = tokio::spawn(report_progress(
            self.store.clone(),
            job.origin.adapter.clone(),
            status_ref,
            job.id.clone(),
            job.short.clone(),
            job.tool_name.clone(),
            rx,
            started,
            (job.notify == TaskNotify::Changes).then_some(job.origin.conversation.chat),
            progress_done.clone(),
        ));
        let tool = Arc::clone(&job.tool);
        let args = job.args.clone();
        let outcome = tokio::spawn(async move { tool.call(args, &ctx).await }).await;
        progress_done.cancel();
        let last_progress = reporter.await.unwrap_or_default();
        let (status, result) = match outcome {
            Ok(Ok(text)) => (TaskStatus::Succeeded, text),
            Ok(Err(_)) if self.shutdown.is_cancelled() => self.stopped_outcome(),
            Ok(Err(crate::tools::ToolError::Cancelled)) => self.stopped_outcome(),
            Ok(Err(e)) => (TaskStatus::Failed, e.for_model()),
            Err(join) => {
                tracing::error!(error = %join, task = %job.id, "background task crashed");
                (
                    TaskStatus::Failed,
                    "error: the task crashed; the operator has the details".to_owned(),
                )
            }
        };
        // A background tool's result reaches the store, the notification and
        // the model like a foreground one's: without known secrets.
        (status, crate::secrets::scrub_string(result), last_progress)
    }

    async fn post_status(&self, job: &Job, status: TaskStatus) -> Option<MessageRef> {
        let mut text = progress::status_text(
            &job.short,
            &job.tool_name,
            status,
            &Progress::default(),
            Duration::ZERO,
        );
        if status == TaskStatus::Queued {
            text.push_str(&format!(
                "\nQueued: a conversation runs at most {} background task(s) at once; this one starts when one ends.",
                self.slots.per_session()
            ));
        }
        match job
            .origin
            .adapter
            .send(&job.origin.conversation.chat, OutgoingMessage::text(text))
            .await
        {
            Ok(r) => {
                if let Err(e) = self.store.tasks().set_status_message(&job.id, r.id).await {
                    tracing::warn!(error = %e, "could not store the task status message");
                }
                Some(r)
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not post a task status message");
                None
            }
        }
    }

    /// The tasks this process runs (or has queued to run).
    pub fn running_ids(&self) -> Vec<TaskId> {
        self.running_lock().keys().cloned().collect()
    }

    fn running_lock(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, CancellationToken>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}
