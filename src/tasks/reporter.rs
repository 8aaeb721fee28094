//! What runs beside a background task: the reporter that mirrors its progress into its row, its status message and
//! (with `notify: changes`) milestone messages, and the recording of its result.

use super::progress;
use crate::domain::TaskId;
use crate::store::{Backoff, Store, TaskStatus};
use crate::tools::Progress;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchboard_platform::{ChatAddress, MessageRef, OutgoingMessage, PlatformAdapter};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Minimum time between two progress edits of a status message.
const PROGRESS_EDIT_INTERVAL: Duration = Duration::from_secs(1);

/// Mirrors progress into the database and the status message, at most once per
/// [`PROGRESS_EDIT_INTERVAL`]. Returns the last progress seen.
#[allow(clippy::too_many_arguments)]
pub(super) async fn report_progress(
    store: Store,
    adapter: Arc<dyn PlatformAdapter>,
    status_ref: Option<MessageRef>,
    id: TaskId,
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
            .tasks()
            .update_progress(&id, TaskStatus::Running, &p.stage, &p.detail, p.percent)
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

/// Stores a finished task's result, retrying while storage is down (the task
/// stays its process's own meanwhile, so no sweeper calls it interrupted);
/// given up only at `shutdown`.
pub(super) async fn record_result(
    store: &Store,
    shutdown: &CancellationToken,
    id: &TaskId,
    status: TaskStatus,
    result: &str,
) {
    let mut backoff = Backoff::default();
    loop {
        let e = match store.tasks().finish(id, status, result).await {
            Ok(_) => return,
            Err(e) => e,
        };
        tracing::error!(error = %e, task = %id, retry_in = ?backoff.next_wait(), "could not record the task result");
        if !backoff.wait(shutdown).await {
            return;
        }
    }
}
