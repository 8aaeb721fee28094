//! The gateway's periodic loop: it asks `approvals` to expire what is due
//! (and resumes those turns), `tasks` to fire due schedules (and queues them),
//! and tells users about tasks a dead process left behind.

use super::Inner;
use crate::store::TaskNotify;
use crate::tasks::Fired;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{MessageRef, OutgoingMessage};
use tokio::sync::mpsc;

/// The longest the maintenance loop sleeps before looking for due work again.
const TICK: Duration = Duration::from_secs(1);
/// The shortest sleep between passes, so a row that stays due cannot spin the loop.
const MIN_WAIT: Duration = Duration::from_millis(10);
/// How often tasks abandoned by a dead process are looked for (their lease is
/// 60 s, so a crash is reported within about a minute and a quarter, also when
/// the process restarted before the lease ran out), cancel requests from other
/// processes are applied, and idle limiter state is dropped.
const HOUSEKEEPING: Duration = Duration::from_secs(5);

pub(crate) async fn run(inner: Arc<Inner>, fired: mpsc::Sender<Fired>) {
    let mut last_housekeeping = tokio::time::Instant::now();
    loop {
        if last_housekeeping.elapsed() >= HOUSEKEEPING {
            last_housekeeping = tokio::time::Instant::now();
            announce_interrupted_tasks(&inner).await;
            super::pairing_notice::announce_approved_pairings(&inner).await;
            if let Err(e) = inner.tasks.apply_cancel_requests().await {
                tracing::warn!(error = %e, "could not look for task cancel requests");
            }
            keep_inbox(&inner).await;
            super::in_flight::keep_resumes(&inner).await;
            if let Err(e) = inner.store.prune_sightings().await {
                tracing::debug!(error = %e, "could not prune inbound sightings");
            }
            inner.limiter.prune();
            inner.approval_presses.prune();
            // Tells the operator (and copies the live data) when the database
            // file was deleted or replaced under the gateway.
            inner.store.check_file().await;
        }
        expire_due_approvals(&inner).await;
        super::relay::deliver_outbox(&inner).await;
        // Wake for the next occurrence on time rather than on a fixed tick;
        // look again at least every TICK (other processes add schedules too).
        let wait = match crate::tasks::fire_due_schedules(&inner.store, &fired).await {
            Ok(Some(due)) => {
                let ms = due - chrono::Utc::now().timestamp_millis();
                u64::try_from(ms).map_or(MIN_WAIT, |ms| {
                    Duration::from_millis(ms).clamp(MIN_WAIT, TICK)
                })
            }
            Ok(None) => TICK,
            Err(e) => {
                tracing::warn!(error = %e, "could not claim due schedules");
                TICK
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = inner.shutdown.cancelled() => return,
        }
    }
}

/// Expires due cards and edits nobody sent (in `approvals`), then resumes
/// their paused turns.
async fn expire_due_approvals(inner: &Arc<Inner>) {
    for id in inner.approvals.expire_due(|p| inner.adapter(p)).await {
        super::queue_resume(inner, id).await;
    }
}

/// Paused turns whose approval was decided while no process could resume
/// them (a crash between the decision and the claim) are resumed now.
pub(crate) async fn resume_orphaned_turns(inner: &Arc<Inner>) {
    match inner.store.orphaned_turns().await {
        Ok(ids) => {
            for id in ids {
                super::queue_resume(inner, id).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not look for orphaned turns"),
    }
}

/// Tasks whose process died are marked interrupted and their chats told (at
/// start-up and then every [`HOUSEKEEPING`]; the conditional update makes one
/// process the teller).
pub(crate) async fn announce_interrupted_tasks(inner: &Arc<Inner>) {
    let alive = inner.tasks.running_ids();
    let tasks = match inner.store.interrupt_abandoned_tasks(&alive).await {
        Ok(t) => t,
        Err(e) => return tracing::warn!(error = %e, "could not check for interrupted tasks"),
    };
    for task in tasks {
        inner
            .store
            .record_event("task.interrupted", serde_json::json!({ "id": task.id }))
            .await;
        // A silent task's chat was never told about it: the audit row is all.
        if task.notify == TaskNotify::Silent {
            continue;
        }
        let Some(adapter) = inner.adapter(task.chat.platform) else {
            continue;
        };
        let short = crate::domain::short_id(&task.id);
        let text = format!(
            "⚠️ Background task `{short}` ({}) was interrupted: the gateway stopped while it ran. Ask me to run it again if you still need it.",
            task.tool_name
        );
        if let Some(id) = task.status_message {
            let _ = adapter
                .edit(
                    &MessageRef {
                        chat: task.chat,
                        id,
                    },
                    OutgoingMessage::text(text.clone()),
                )
                .await;
        }
        if let Err(e) = adapter.send(&task.chat, OutgoingMessage::text(text)).await {
            tracing::warn!(error = %e, "could not tell a chat about an interrupted task");
        }
    }
}

/// Renews this process's inbox lease and takes over the inbox of processes
/// that are gone.
async fn keep_inbox(inner: &Arc<Inner>) {
    if inner.inbox_held.load(std::sync::atomic::Ordering::Relaxed) > 0 {
        if let Err(e) = inner.store.inbox_renew(&inner.instance).await {
            tracing::warn!(error = %e, "could not renew the inbox lease");
        }
    }
    take_abandoned_inbox(inner).await;
}

/// Queues the messages other (dead) processes — or this one before a
/// restart — accepted but never started, oldest first: those in the inbox,
/// and those they could only spool locally during a storage outage.
pub(crate) async fn take_abandoned_inbox(inner: &Arc<Inner>) {
    if let Some(spool) = &inner.spool {
        match spool.adopt(&inner.store).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                count = n,
                "moved messages spooled by a stopped process into the inbox"
            ),
            Err(e) => tracing::warn!(error = %e, "could not move spooled messages into the inbox"),
        }
    }
    let platforms: Vec<_> = inner.adapters.keys().copied().collect();
    match inner
        .store
        .inbox_take_abandoned(&inner.instance, &platforms)
        .await
    {
        Ok(entries) => {
            if !entries.is_empty() {
                tracing::info!(count = entries.len(), "taking over queued messages");
            }
            for entry in entries {
                super::queue_from_inbox(inner, entry).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not look for abandoned inbox messages"),
    }
}
