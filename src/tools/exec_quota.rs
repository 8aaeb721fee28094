//! Stopping a command that fills its user's workspace folder: the folder is
//! measured every few seconds while the command runs, and a command whose
//! folder has grown past its quota (`WORKSPACE_QUOTA_MB`) is stopped. Between
//! two measures a command can write more (at most `RLIMIT_FSIZE` per file);
//! a folder already over the quota when the command starts may still shrink
//! (`rm` works), only growth stops it.

use super::Workspace;
use crate::workspace::quota::usage_of;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::{Instant, Interval, MissedTickBehavior};

/// How often a running command's folder is measured.
const EVERY: Duration = Duration::from_secs(2);

/// A running command's folder, measured against its quota.
pub(super) struct QuotaWatch {
    dir: PathBuf,
    quota: u64,
    /// The folder's size when the command started.
    baseline: u64,
    ticker: Interval,
}

/// A folder found over its quota: its size and the quota.
#[derive(Debug, Clone, Copy)]
pub(super) struct OverQuota {
    pub total: u64,
    pub quota: u64,
}

impl QuotaWatch {
    /// Watches `ws` when it has a quota (a user's folder).
    pub(super) async fn start(ws: &Workspace) -> Option<QuotaWatch> {
        let quota = ws.quota()?;
        let baseline = usage_of(ws.root()).await;
        let mut ticker = tokio::time::interval_at(Instant::now() + EVERY, EVERY);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Some(QuotaWatch {
            dir: ws.root().to_path_buf(),
            quota,
            baseline,
            ticker,
        })
    }

    /// Waits for the next measure and resolves when the folder has grown
    /// past its quota; never resolves without a watch. Dropping it between
    /// measures loses nothing.
    pub(super) async fn over(watch: Option<&mut QuotaWatch>) -> OverQuota {
        let Some(watch) = watch else {
            return std::future::pending().await;
        };
        loop {
            watch.ticker.tick().await;
            let total = usage_of(&watch.dir).await;
            if total > watch.quota && total > watch.baseline {
                return OverQuota {
                    total,
                    quota: watch.quota,
                };
            }
        }
    }
}
