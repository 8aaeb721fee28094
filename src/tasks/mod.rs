//! Background tasks: run a tool on its own task, show progress by editing one
//! status message, record the outcome, and hand the result back to the gateway
//! as a system notification for the originating session.

mod progress;
mod schedule;

pub use schedule::{first_occurrence, next_occurrence, ScheduleError};

use crate::busy::{Busy, BusyGuard};
use crate::llm::ToolCall;
use crate::store::{SessionKey, Store, StoreError, TaskNotify, TaskRecord, TaskStatus, TurnOrigin};
use crate::tools::{Progress, ProgressSink, Tool, ToolContext};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use switchboard_platform::{
    ChatAddress, ChatKind, MessageRef, OutgoingMessage, PlatformAdapter, User,
};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// Where a task came from; its notification goes back there.
#[derive(Clone)]
pub struct TaskOrigin {
    pub session_id: String,
    pub key: SessionKey,
    pub chat: ChatAddress,
    pub kind: ChatKind,
    pub user: User,
    pub adapter: Arc<dyn PlatformAdapter>,
}

/// A finished task, for the gateway to inject into the session.
pub struct TaskFinished {
    pub task_id: String,
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
    Task(String),
    /// A task of the conversation that another gateway process runs: that
    /// process was asked to stop it and does so within a few seconds.
    Requested(String),
    /// A task of the conversation that is not running (any more).
    NotRunning(String, TaskStatus),
    /// An active schedule of the conversation, now stopped.
    Schedule(String),
    /// Nothing of this conversation has that id.
    NotFound,
}

/// How often a running task renews its lease (the lease lasts 60 s).
const LEASE_RENEWAL: Duration = Duration::from_secs(20);
/// Minimum time between two progress edits of a status message.
const PROGRESS_EDIT_INTERVAL: Duration = Duration::from_secs(1);
/// How much of a result the notification carries (the rest via check_background_tasks).
const NOTIFICATION_RESULT_CHARS: usize = 4_000;

/// Starts and tracks background tasks.
pub struct TaskManager {
    store: Store,
    finished: mpsc::Sender<TaskFinished>,
    running: Mutex<HashMap<String, CancellationToken>>,
    shutdown: CancellationToken,
    busy: Busy,
}

impl TaskManager {
    pub fn new(
        store: Store,
        finished: mpsc::Sender<TaskFinished>,
        shutdown: CancellationToken,
        busy: Busy,
    ) -> Arc<TaskManager> {
        Arc::new(TaskManager {
            store,
            finished,
            running: Mutex::new(HashMap::new()),
            shutdown,
            busy,
        })
    }

    /// Records the task and starts it; returns the task id at once. The
    /// call's optional `notify` argument (`done`, `changes`, `silent`) sets who
    /// hears about it.
    pub async fn start(
        self: &Arc<Self>,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        args: Value,
        origin: TaskOrigin,
    ) -> Result<String, StoreError> {
        let notify = args
            .get("notify")
            .and_then(Value::as_str)
            .and_then(TaskNotify::parse)
            .unwrap_or_default();
        let id = uuid::Uuid::new_v4().simple().to_string();
        let record = TaskRecord {
            id: id.clone(),
            session_id: origin.session_id.clone(),
            tool_name: call.name.clone(),
            arguments: args.to_string(),
            status: TaskStatus::Running,
            stage: String::new(),
            detail: String::new(),
            percent: None,
            result: None,
            chat: origin.chat,
            status_message: None,
            notify,
            created_at: chrono::Utc::now(),
            finished_at: None,
        };
        self.store.insert_task(&record).await?;
        self.store
            .record_event("task.started", json!({ "id": id, "tool": call.name }))
            .await;
        let cancel = self.shutdown.child_token();
        self.running_lock().insert(id.clone(), cancel.clone());
        let guard = self.busy.enter();
        let manager = Arc::clone(self);
        let tool_name = call.name.clone();
        tokio::spawn(async move {
            manager
                .run(
                    record.id, tool_name, tool, args, origin, notify, cancel, guard,
                )
                .await
        });
        Ok(id)
    }

    /// Cancels a running task of the given session. Returns whether it was running.
    pub fn cancel(&self, task_id: &str) -> bool {
        match self.running_lock().get(task_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels the conversation's task or schedule named by `id` (or an id
    /// prefix of at least 6 characters). Nothing of another conversation is
    /// reachable.
    pub async fn cancel_in_session(
        &self,
        session_id: &str,
        id: &str,
    ) -> Result<Cancelled, StoreError> {
        let id = id.trim().to_ascii_lowercase();
        if id.len() < 6 {
            return Ok(Cancelled::NotFound);
        }
        let tasks = self.store.session_tasks(session_id, 100).await?;
        if let Some(task) = tasks.iter().find(|t| t.id.starts_with(&id)) {
            return Ok(if self.cancel(&task.id) {
                Cancelled::Task(task.id.clone())
            } else if !task.status.is_finished() && self.store.request_task_cancel(&task.id).await?
            {
                Cancelled::Requested(task.id.clone())
            } else {
                Cancelled::NotRunning(task.id.clone(), task.status)
            });
        }
        Ok(match self.store.cancel_schedule(session_id, &id).await? {
            Some(full) => Cancelled::Schedule(full),
            None => Cancelled::NotFound,
        })
    }

    /// Stops the tasks of this process that another process was asked to
    /// cancel. Costs nothing while this process runs no task.
    pub async fn apply_cancel_requests(&self) -> Result<(), StoreError> {
        if self.running_lock().is_empty() {
            return Ok(());
        }
        for id in self.store.cancel_requested_tasks().await? {
            if self.cancel(&id) {
                tracing::info!(task = %id, "task cancelled at another process's request");
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn run(
        self: Arc<Self>,
        id: String,
        tool_name: String,
        tool: Arc<dyn Tool>,
        args: Value,
        origin: TaskOrigin,
        notify: TaskNotify,
        cancel: CancellationToken,
        guard: BusyGuard,
    ) {
        let started = Instant::now();
        let short = id.get(..8).unwrap_or(&id).to_owned();
        let status_ref = match notify {
            TaskNotify::Silent => None,
            TaskNotify::Done | TaskNotify::Changes => {
                self.post_status(&origin, &id, &short, &tool_name).await
            }
        };
        let milestones = (notify == TaskNotify::Changes).then_some(origin.chat);
        let (tx, rx) = watch::channel(Progress::default());
        let ctx = ToolContext {
            cancel: cancel.clone(),
            progress: ProgressSink::new(tx),
            session_id: origin.session_id.clone(),
            origin: Some(TurnOrigin {
                key: origin.key,
                chat: origin.chat,
                kind: origin.kind,
                user: origin.user.clone(),
                reply_to: None,
            }),
        };
        let lease = tokio::spawn(renew_lease(self.store.clone(), id.clone(), cancel.clone()));
        let progress_done = CancellationToken::new();
        let reporter = tokio::spawn(report_progress(
            self.store.clone(),
            origin.adapter.clone(),
            status_ref,
            id.clone(),
            short.clone(),
            tool_name.clone(),
            rx,
            started,
            milestones,
            progress_done.clone(),
        ));
        let outcome = tokio::spawn(async move { tool.call(args, &ctx).await }).await;
        progress_done.cancel();
        lease.abort();
        let last_progress = reporter.await.unwrap_or_default();
        let (status, result) = match outcome {
            Ok(Ok(text)) => (TaskStatus::Succeeded, text),
            Ok(Err(_)) if self.shutdown.is_cancelled() => {
                (TaskStatus::Interrupted, "the gateway stopped".to_owned())
            }
            Ok(Err(crate::tools::ToolError::Cancelled)) => {
                (TaskStatus::Cancelled, "cancelled".to_owned())
            }
            Ok(Err(e)) => (TaskStatus::Failed, e.for_model()),
            Err(join) => {
                tracing::error!(error = %join, task = %id, "background task crashed");
                (
                    TaskStatus::Failed,
                    "error: the task crashed; the operator has the details".to_owned(),
                )
            }
        };
        self.running_lock().remove(&id);
        if let Err(e) = self.store.finish_task(&id, status, &result).await {
            tracing::error!(error = %e, task = %id, "could not record the task result");
        }
        self.store
            .record_event(
                "task.finished",
                json!({ "id": id, "status": status.as_str() }),
            )
            .await;
        if let Some(msg) = status_ref {
            let text = progress::status_text(
                &short,
                &tool_name,
                status,
                &last_progress,
                started.elapsed(),
            );
            if let Err(e) = origin.adapter.edit(&msg, OutgoingMessage::text(text)).await {
                tracing::warn!(error = %e, "could not finalize a task status message");
            }
        }
        if status == TaskStatus::Interrupted || notify == TaskNotify::Silent {
            return;
        }
        let result = clip(&result, NOTIFICATION_RESULT_CHARS);
        let finished = TaskFinished {
            task_id: id,
            tool_name,
            status,
            result,
            origin,
            guard,
        };
        if self.finished.send(finished).await.is_err() {
            tracing::warn!("gateway gone; task notification dropped");
        }
    }

    async fn post_status(
        &self,
        origin: &TaskOrigin,
        id: &str,
        short: &str,
        tool: &str,
    ) -> Option<MessageRef> {
        let text = progress::status_text(
            short,
            tool,
            TaskStatus::Running,
            &Progress::default(),
            Duration::ZERO,
        );
        match origin
            .adapter
            .send(&origin.chat, OutgoingMessage::text(text))
            .await
        {
            Ok(r) => {
                if let Err(e) = self.store.set_task_status_message(id, r.id).await {
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

    fn running_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Keeps the task's row leased while this process runs it, so a restart can
/// tell tasks of dead processes from live ones.
async fn renew_lease(store: Store, id: String, cancel: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(LEASE_RENEWAL) => {}
            () = cancel.cancelled() => return,
        }
        if let Err(e) = store.renew_task_lease(&id).await {
            tracing::warn!(error = %e, task = %id, "could not renew a task lease");
        }
    }
}

/// Mirrors progress into the database and the status message, at most once per
/// [`PROGRESS_EDIT_INTERVAL`]. Returns the last progress seen.
#[allow(clippy::too_many_arguments)]
async fn report_progress(
    store: Store,
    adapter: Arc<dyn PlatformAdapter>,
    status_ref: Option<MessageRef>,
    id: String,
    short: String,
    tool: String,
    mut rx: watch::Receiver<Progress>,
    started: Instant,
    milestones: Option<ChatAddress>,
    done: CancellationToken,
) -> Progress {
    // With `notify: changes`: the last (stage, quarter) posted as its own message.
    let mut posted: Option<(String, u8)> = None;
    let interval = adapter
        .capabilities()
        .min_edit_interval
        .max(PROGRESS_EDIT_INTERVAL);
    loop {
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { break },
            () = done.cancelled() => break,
        }
        let p = rx.borrow_and_update().clone();
        if let Err(e) = store
            .update_task_progress(&id, TaskStatus::Running, &p.stage, &p.detail, p.percent)
            .await
        {
            tracing::warn!(error = %e, "could not store task progress");
        }
        if let Some(msg) = &status_ref {
            let text =
                progress::status_text(&short, &tool, TaskStatus::Running, &p, started.elapsed());
            if let Err(e) = adapter.edit(msg, OutgoingMessage::text(text)).await {
                tracing::debug!(error = %e, "progress edit failed");
            }
        }
        if let Some(chat) = &milestones {
            let now = (p.stage.clone(), p.percent.map_or(0, |v| v / 25));
            if !p.stage.is_empty() && posted.as_ref() != Some(&now) {
                let text = progress::milestone_text(&short, &tool, &p);
                if let Err(e) = adapter.send(chat, OutgoingMessage::text(text)).await {
                    tracing::debug!(error = %e, "milestone message failed");
                }
                posted = Some(now);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {},
            () = done.cancelled() => break,
        }
    }
    let last = rx.borrow().clone();
    last
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        format!(
            "{}\n[… truncated; call check_background_tasks with the task_id for the full result]",
            s.chars().take(max).collect::<String>()
        )
    }
}

/// The system notification injected into the session when a task finishes.
pub fn notification_text(f: &TaskFinished) -> String {
    format!(
        "[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>\ntask_id: {}\ntool: {}\nstatus: {}\nresult:\n{}\n</task-notification>\n\
         A background task you started has finished. Tell the user the outcome briefly.",
        f.task_id,
        f.tool_name,
        f.status.as_str(),
        f.result
    )
}
