//! The memory sweeper: extracts what is worth keeping from sessions gone
//! idle, and collects old memories and feedback. One per process; the
//! extraction lease makes one process the extractor of each idle session.

use super::Extractor;
use crate::store::Store;
use crate::Busy;
use chrono::Utc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Idle sessions extracted per sweep at most.
const SWEEP_BATCH: u32 = 20;
/// How often old memories and feedback are collected.
const COLLECT_EVERY: Duration = Duration::from_secs(3600);
/// How often the users due a reflection note are looked for.
const REFLECT_CHECK: Duration = Duration::from_secs(60);
/// Rated answers are kept this long.
const FEEDBACK_RETENTION_DAYS: i64 = 30;

/// Extracts memories from sessions idle for the configured time, and collects
/// old memories and feedback, until shutdown.
pub async fn sweep(extractor: Extractor, store: Store, busy: Busy, shutdown: CancellationToken) {
    let config = extractor.book().config().clone();
    if !config.enabled {
        return;
    }
    let period = (config.idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_collect: Option<tokio::time::Instant> = None;
    let mut last_reflect: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shutdown.cancelled() => return,
        }
        let now = Utc::now();
        let cutoff =
            now - chrono::Duration::from_std(config.idle).unwrap_or(chrono::Duration::minutes(30));
        match store.sessions().idle(cutoff, now, SWEEP_BATCH).await {
            Ok(sessions) => {
                for idle in sessions {
                    let _busy = busy.enter();
                    // Several processes may list the same session; only the one
                    // that claims it extracts (`None` for the others).
                    match extractor.extract_session(&idle, Utc::now()).await {
                        Ok(Some(_)) => {}
                        Ok(None) => {
                            tracing::debug!(session = %idle.session, "idle session claimed elsewhere")
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, session = %idle.session, "idle memory extraction failed")
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not list idle sessions"),
        }
        // Kinds that passed their soft limit since the last tick: trimmed by value.
        match extractor.book().collect_marked(now).await {
            Ok(n) if n > 0 => {
                tracing::debug!(collected = n, "memories over a soft limit collected")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "memory collection over a soft limit failed"),
        }
        if let Some(every) = config.reflection_every {
            if last_reflect.is_none_or(|t| t.elapsed() >= REFLECT_CHECK) {
                last_reflect = Some(tokio::time::Instant::now());
                let every = chrono::Duration::from_std(every).unwrap_or(chrono::Duration::hours(6));
                let _busy = busy.enter();
                match extractor.reflect_due(every, now).await {
                    Ok(notes) if !notes.is_empty() => {
                        tracing::info!(notes = notes.len(), "reflection notes written")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "reflection pass failed"),
                }
            }
        }
        if last_collect.is_none_or(|t| t.elapsed() >= COLLECT_EVERY) {
            last_collect = Some(tokio::time::Instant::now());
            match extractor.book().collect(now).await {
                Ok(n) if n > 0 => tracing::info!(collected = n, "old memories collected"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "memory collection failed"),
            }
            if let Err(e) = store
                .memories()
                .collect_feedback(now, now - chrono::Duration::days(FEEDBACK_RETENTION_DAYS))
                .await
            {
                tracing::warn!(error = %e, "feedback collection failed");
            }
        }
    }
}
