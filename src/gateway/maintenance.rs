//! Periodic work of the gateway: expiring approvals nobody answered (and
//! resuming their turns), firing due schedules, and telling users about tasks a
//! dead process left behind.

use super::turn;
use super::Inner;
use crate::store::TurnOrigin;
use crate::tasks::next_occurrence;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{MessageRef, OutgoingMessage};
use tokio::sync::mpsc;

/// How often the maintenance loop looks for due work.
const TICK: Duration = Duration::from_secs(1);
/// A one-off or cron occurrence later than this is "missed" (downtime).
const MISSED_GRACE_MS: i64 = 60_000;

/// A schedule occurrence this process claimed.
pub(crate) struct Fired {
    pub origin: TurnOrigin,
    pub prompt: String,
}

pub(crate) async fn run(inner: Arc<Inner>, fired: mpsc::Sender<Fired>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = inner.shutdown.cancelled() => return,
        }
        expire_due_approvals(&inner).await;
        fire_due_schedules(&inner, &fired).await;
    }
}

/// Approvals past their deadline whose waiting turn is gone (restart, dead
/// process): mark expired, update the card, resume the turn with a denial.
async fn expire_due_approvals(inner: &Arc<Inner>) {
    let due = match inner.store.due_approvals().await {
        Ok(d) => d,
        Err(e) => return tracing::warn!(error = %e, "could not list due approvals"),
    };
    for record in due {
        let Some(adapter) = inner.adapter(record.chat.platform) else {
            continue;
        };
        let Some(card) = record.card_message else {
            continue;
        };
        let card = MessageRef {
            chat: record.chat,
            id: card,
        };
        if let Err(e) = inner
            .approvals
            .expire(adapter.as_ref(), &record.id, card)
            .await
        {
            tracing::warn!(error = %e, "could not expire an approval");
            continue;
        }
        let (inner, id) = (Arc::clone(inner), record.id.clone());
        tokio::spawn(async move { turn::resume(&inner, &id).await });
    }
}

async fn fire_due_schedules(inner: &Arc<Inner>, fired: &mpsc::Sender<Fired>) {
    let now = chrono::Utc::now().timestamp_millis();
    let due = match inner.store.due_schedules(now, 100).await {
        Ok(d) => d,
        Err(e) => return tracing::warn!(error = %e, "could not list due schedules"),
    };
    for s in due {
        let Some(due_ms) = s.next_run_at else {
            continue;
        };
        let next = next_occurrence(&s.kind, &s.spec, &s.timezone, now).unwrap_or_else(|e| {
            tracing::warn!(error = %e, schedule = %s.id, "schedule spec unusable; stopping it");
            None
        });
        let missed = now - due_ms > MISSED_GRACE_MS;
        let run = !(missed && s.missed == "skip");
        // The conditional update is the claim: one process per occurrence.
        match inner.store.claim_occurrence(&s.id, due_ms, next, run).await {
            Ok(true) if run => {
                inner
                    .store
                    .record_event(
                        "schedule.fired",
                        serde_json::json!({ "id": s.id, "missed": missed }),
                    )
                    .await;
                if fired
                    .send(Fired {
                        origin: s.origin.clone(),
                        prompt: s.prompt.clone(),
                    })
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Ok(true) => {
                inner
                    .store
                    .record_event("schedule.skipped", serde_json::json!({ "id": s.id }))
                    .await
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "could not claim a schedule occurrence"),
        }
    }
}

/// Paused turns whose approval was decided while no process could resume
/// them (a crash between the decision and the claim) are resumed now.
pub(crate) async fn resume_orphaned_turns(inner: &Arc<Inner>) {
    match inner.store.orphaned_turns().await {
        Ok(ids) => {
            for id in ids {
                let inner = Arc::clone(inner);
                tokio::spawn(async move { turn::resume(&inner, &id).await });
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not look for orphaned turns"),
    }
}

/// Tasks whose process died are marked interrupted and their chats told.
pub(crate) async fn announce_interrupted_tasks(inner: &Arc<Inner>) {
    let tasks = match inner.store.interrupt_abandoned_tasks().await {
        Ok(t) => t,
        Err(e) => return tracing::warn!(error = %e, "could not check for interrupted tasks"),
    };
    for task in tasks {
        inner
            .store
            .record_event("task.interrupted", serde_json::json!({ "id": task.id }))
            .await;
        let Some(adapter) = inner.adapter(task.chat.platform) else {
            continue;
        };
        let short = task.id.get(..8).unwrap_or(&task.id);
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
