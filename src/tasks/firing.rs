//! Firing due schedules: claimed in batches by whichever process gets there
//! first, each occurrence at most once, handed to the gateway as a `Fired`.

use super::next_occurrence;
use crate::domain::Conversation;
use crate::store::{OccurrencePlan, ScheduleRecord, Store, StoreError};
use tokio::sync::mpsc;

/// A one-off or cron occurrence later than this is "missed" (downtime).
const MISSED_GRACE_MS: i64 = 60_000;
/// Occurrences claimed per transaction; claiming repeats while any are due.
const CLAIM_BATCH: u32 = 200;

/// A schedule occurrence this process claimed.
pub struct Fired {
    pub origin: Conversation,
    pub prompt: String,
}

/// Claims every due occurrence (in batches) and hands the ones that run to the
/// gateway; returns when the next one is due. A claimed occurrence is
/// delivered at most once: if this process dies before its turn runs, it is
/// not fired again (see README, "Delivery guarantees"). Nothing due costs one
/// indexed read, no transaction.
pub async fn fire_due_schedules(
    store: &Store,
    fired: &mpsc::Sender<Fired>,
) -> Result<Option<i64>, StoreError> {
    loop {
        let now = chrono::Utc::now().timestamp_millis();
        match store.schedules().next_due().await? {
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
        let claimed = store.schedules().claim_due(now, CLAIM_BATCH, plan).await?;
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
