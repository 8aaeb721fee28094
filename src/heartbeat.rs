//! This process's row in `processes`: renewed every 30 s so the web console
//! of any process on the database lists every process sharing it.

use crate::store::{ProcessRow, Store};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const EVERY: Duration = Duration::from_secs(30);

/// Renews the heartbeat of process `instance` until `shutdown`, then takes
/// the row away.
pub(crate) async fn run(
    store: Store,
    instance: crate::domain::ProcessId,
    web: Option<String>,
    shutdown: CancellationToken,
) {
    let now = chrono::Utc::now();
    let row = ProcessRow {
        id: instance,
        host: hostname(),
        pid: i64::from(std::process::id()),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        web,
        started_at: now,
        seen_at: now,
    };
    loop {
        if let Err(e) = store.process_heartbeat(&row).await {
            tracing::debug!(error = %e, "could not renew this process's heartbeat");
        }
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(EVERY) => {}
        }
    }
    let _ = store.process_gone(&row.id).await;
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}
