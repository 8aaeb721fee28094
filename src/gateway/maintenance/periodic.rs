//! The gateway's periodic loop: it asks `approvals` to expire what is due
//! (and resumes those turns), `tasks` to fire due schedules (and queues them),
//! and takes over what processes that are gone left behind — their queued
//! messages, resumed turns and tasks — within [`TAKEOVER`] of their death.

use crate::gateway::Inner;
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
/// How often cancel requests from other processes are applied, approved
/// pairings announced and idle limiter state dropped.
const HOUSEKEEPING: Duration = Duration::from_secs(5);
/// How often the owners of queued work are asked whether they are alive
/// (one indexed read; a liveness check per foreign owner): a dead process's
/// work is taken over within this.
const TAKEOVER: Duration = Duration::from_secs(2);

pub(crate) async fn run(inner: Arc<Inner>, fired: mpsc::Sender<Fired>) {
    let mut last_housekeeping = tokio::time::Instant::now();
    let mut last_takeover = tokio::time::Instant::now();
    loop {
        if last_takeover.elapsed() >= TAKEOVER {
            last_takeover = tokio::time::Instant::now();
            take_over(&inner, false).await;
        }
        if last_housekeeping.elapsed() >= HOUSEKEEPING {
            last_housekeeping = tokio::time::Instant::now();
            crate::gateway::maintenance::pairing_notice::announce_approved_pairings(&inner).await;
            if let Err(e) = inner.tasks.apply_cancel_requests().await {
                tracing::warn!(error = %e, "could not look for task cancel requests");
            }
            if let Err(e) = inner.store.inbox().prune_sightings().await {
                tracing::debug!(error = %e, "could not prune inbound sightings");
            }
            inner.gate.limiter.prune();
            inner.gate.approval_presses.prune();
            // Tells the operator (and copies the live data) when the database
            // file was deleted or replaced under the gateway.
            inner.store.check_file().await;
        }
        expire_due_approvals(&inner).await;
        crate::gateway::maintenance::relay::deliver_outbox(&inner).await;
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
            () = inner.life.shutdown.cancelled() => return,
        }
    }
}

/// Expires due cards and edits nobody sent (in `approvals`), then resumes
/// their paused turns.
async fn expire_due_approvals(inner: &Arc<Inner>) {
    for id in inner.approvals.expire_due(|p| inner.adapter(p)).await {
        crate::gateway::session::queue::queue_resume(inner, id).await;
    }
}

/// Paused turns whose approval was decided while no process could resume
/// them (a crash between the decision and the claim) are resumed now.
pub(crate) async fn resume_orphaned_turns(inner: &Arc<Inner>) {
    match inner.store.turns().orphaned().await {
        Ok(ids) => {
            for id in ids {
                crate::gateway::session::queue::queue_resume(inner, id).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not look for orphaned turns"),
    }
}

/// Takes over what the processes that are gone left: the messages they
/// (or their spools) kept, the resumed turns they ran, and their tasks
/// (marked interrupted, their chats told). At start, also the tasks no
/// process owns (from before owners were recorded).
pub(crate) async fn take_over(inner: &Arc<Inner>, at_start: bool) {
    if let Some(spool) = &inner.durability.spool {
        match spool.adopt(&inner.store).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                count = n,
                "moved messages spooled by a stopped process into the inbox"
            ),
            Err(e) => tracing::warn!(error = %e, "could not move spooled messages into the inbox"),
        }
    }
    let gone = match gone_owners(inner).await {
        Ok(gone) => gone,
        Err(e) => {
            return tracing::warn!(error = %e, "could not look for the work of stopped processes")
        }
    };
    for owner in &gone {
        take_inbox(inner, owner).await;
        crate::gateway::turn::in_flight::report_interrupted_resumes(inner, owner).await;
    }
    if at_start || !gone.is_empty() {
        announce_interrupted_tasks(inner, &gone).await;
    }
}

/// The owners of queued work other than this process whose liveness claim
/// has ended.
async fn gone_owners(
    inner: &Inner,
) -> Result<Vec<crate::domain::ProcessId>, crate::store::StoreError> {
    let owners = inner
        .store
        .inbox()
        .foreign_owners(&inner.durability.instance)
        .await?;
    inner.store.gone_owners(&owners).await
}

/// Queues the messages `gone` accepted and never answered, oldest first.
async fn take_inbox(inner: &Arc<Inner>, gone: &crate::domain::ProcessId) {
    let platforms: Vec<_> = inner.platforms.adapters.keys().copied().collect();
    match inner
        .store
        .inbox()
        .take_over(gone, &inner.durability.instance, &platforms)
        .await
    {
        Ok(entries) => {
            if !entries.is_empty() {
                tracing::info!(
                    count = entries.len(),
                    "taking over queued messages of a stopped process"
                );
            }
            for entry in entries {
                if !crate::gateway::turn::in_flight::interrupted(inner, &entry).await {
                    crate::gateway::session::queue::queue_from_inbox(inner, entry);
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not take over queued messages"),
    }
}

/// The unfinished tasks of the `gone` processes (and of none) are marked
/// interrupted and their chats told; the conditional update makes one
/// process the teller.
async fn announce_interrupted_tasks(inner: &Arc<Inner>, gone: &[crate::domain::ProcessId]) {
    let alive = inner.tasks.running_ids();
    let tasks = match inner.store.tasks().interrupt_orphaned(gone, &alive).await {
        Ok(t) => t,
        Err(e) => return tracing::warn!(error = %e, "could not check for interrupted tasks"),
    };
    for task in tasks {
        inner
            .store
            .audit()
            .record("task.interrupted", serde_json::json!({ "id": task.id }))
            .await;
        // A silent task's chat was never told about it: the audit row is all.
        if task.notify == TaskNotify::Silent {
            continue;
        }
        let Some(adapter) = inner.adapter(task.chat.platform) else {
            continue;
        };
        let short = task.id.short();
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
