//! Periodic work of the gateway: expiring approvals nobody answered (and
//! resuming their turns), firing due schedules, and telling users about tasks a
//! dead process left behind.

use super::Inner;
use crate::store::{Conversation, OccurrencePlan, ScheduleRecord, StoreError, TaskNotify};
use crate::tasks::next_occurrence;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{MessageRef, OutgoingMessage};
use tokio::sync::mpsc;

/// The longest the maintenance loop sleeps before looking for due work again.
const TICK: Duration = Duration::from_secs(1);
/// The shortest sleep between passes, so a row that stays due cannot spin the loop.
const MIN_WAIT: Duration = Duration::from_millis(10);
/// A one-off or cron occurrence later than this is "missed" (downtime).
const MISSED_GRACE_MS: i64 = 60_000;
/// Occurrences claimed per transaction; claiming repeats while any are due.
const CLAIM_BATCH: u32 = 200;
/// How often tasks abandoned by a dead process are looked for (their lease is
/// 60 s, so a crash is reported within about a minute and a quarter, also when
/// the process restarted before the lease ran out), cancel requests from other
/// processes are applied, and idle limiter state is dropped.
const HOUSEKEEPING: Duration = Duration::from_secs(5);

/// A schedule occurrence this process claimed.
pub(crate) struct Fired {
    pub origin: Conversation,
    pub prompt: String,
}

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
            inner.limiter.prune();
            inner.approval_presses.prune();
            // Tells the operator (and copies the live data) when the database
            // file was deleted or replaced under the gateway.
            inner.store.check_file().await;
        }
        expire_due_approvals(&inner).await;
        // Wake for the next occurrence on time rather than on a fixed tick;
        // look again at least every TICK (other processes add schedules too).
        let wait = match fire_due_schedules(&inner, &fired).await {
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

/// Approvals past their deadline: mark expired, update the card, resume the
/// turn with the expiry (read as a denial). Edits nobody sent within the
/// approval timeout expire the same way.
async fn expire_due_approvals(inner: &Arc<Inner>) {
    expire_stale_edits(inner).await;
    let due = match inner.store.due_approvals(inner.approvals.now()).await {
        Ok(d) => d,
        Err(e) => return tracing::warn!(error = %e, "could not list due approvals"),
    };
    for record in due {
        let Some(adapter) = inner.adapter(record.chat.platform) else {
            continue;
        };
        let card = record.card_message.map(|id| MessageRef {
            chat: record.chat,
            id,
        });
        match inner
            .approvals
            .expire(adapter.as_ref(), &record.id, card)
            .await
        {
            Ok(true) => super::queue_resume(inner, record.id).await,
            // Decided meanwhile: whoever decided resumes it.
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "could not expire an approval"),
        }
    }
}

/// Approvals sent back for editing whose new arguments never came.
async fn expire_stale_edits(inner: &Arc<Inner>) {
    let timeout = chrono::Duration::from_std(inner.approvals.timeout())
        .unwrap_or(chrono::Duration::minutes(10));
    let cutoff = (inner.approvals.now() - timeout).timestamp_millis();
    match inner.store.expire_stale_edits(cutoff).await {
        Ok(ids) => {
            for id in ids {
                inner
                    .store
                    .record_event("approval.expired", serde_json::json!({ "id": id }))
                    .await;
                super::queue_resume(inner, id).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not expire edits nobody sent"),
    }
}

/// Claims every due occurrence (in batches) and hands the ones that run to the
/// gateway; returns when the next one is due. A claimed occurrence is
/// delivered at most once: if this process dies before its turn runs, it is
/// not fired again (see README, "Delivery guarantees"). Nothing due costs one
/// indexed read, no transaction.
async fn fire_due_schedules(
    inner: &Arc<Inner>,
    fired: &mpsc::Sender<Fired>,
) -> Result<Option<i64>, StoreError> {
    loop {
        let now = chrono::Utc::now().timestamp_millis();
        match inner.store.next_schedule_due().await? {
            Some(due) if due <= now => {}
            next => return Ok(next),
        }
        let plan = |s: &ScheduleRecord| {
            let next = next_occurrence(&s.kind, &s.spec, &s.timezone, now).unwrap_or_else(|e| {
                tracing::warn!(error = %e, schedule = %s.id, "schedule spec unusable; stopping it");
                None
            });
            let missed = s.next_run_at.is_some_and(|due| now - due > MISSED_GRACE_MS);
            OccurrencePlan {
                next,
                run: !(missed && s.missed == "skip"),
                missed,
            }
        };
        let claimed = inner
            .store
            .claim_due_schedules(now, CLAIM_BATCH, plan)
            .await?;
        if claimed.is_empty() {
            // Due, but another process holds them: look again shortly.
            return Ok(Some(now));
        }
        for c in claimed.into_iter().filter(|c| c.plan.run) {
            let occurrence = Fired {
                origin: c.schedule.origin,
                prompt: c.schedule.prompt,
            };
            if fired.send(occurrence).await.is_err() {
                return Ok(None); // the gateway is stopping
            }
        }
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
                super::queue_from_inbox(inner, entry);
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not look for abandoned inbox messages"),
    }
}
