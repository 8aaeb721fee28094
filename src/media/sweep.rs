//! The retention sweep: files unused for `MEDIA_RETENTION_DAYS` are
//! forgotten and deleted (a scaled copy with its original), then
//! interrupted downloads and unrecorded leftovers are removed.

use super::{files, orphans, Media};
use crate::store::StoreError;
use std::path::Path;

/// Records forgotten per query.
const BATCH: i64 = 200;

impl Media {
    /// Sweeps at start and then hourly until `shutdown`.
    pub async fn sweep_hourly(
        self: std::sync::Arc<Self>,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        loop {
            match self.sweep().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(files = n, "collected unused media files"),
                Err(e) => tracing::warn!(error = %e, "could not collect media files"),
            }
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_secs(3600)) => {}
                () = shutdown.cancelled() => return,
            }
        }
    }

    /// Collects files unused for the retention period, and leftovers of
    /// interrupted downloads; returns how many files went.
    pub async fn sweep(&self) -> Result<usize, StoreError> {
        self.sweep_at(crate::store::now()).await
    }

    /// [`Media::sweep`] as of `now` (epoch ms): recorded files last used,
    /// and unrecorded files last written, before `now` minus the retention
    /// go. A recorded file already gone from disk is only forgotten.
    pub async fn sweep_at(&self, now: i64) -> Result<usize, StoreError> {
        let dir = &self.config.dir;
        let before = now - i64::from(self.config.retention_days) * 86_400_000;
        let mut removed = 0;
        loop {
            let batch = self.store.media().unused_since(before, BATCH).await?;
            for hash in &batch {
                if self.store.media().forget(hash, before).await? {
                    removed += remove(dir, hash).await;
                    for copy in self.store.media().forget_derived(hash).await? {
                        removed += remove(dir, &copy).await;
                    }
                }
            }
            if batch.len() < BATCH as usize {
                break;
            }
        }
        self.store.media().prune_downloads().await?;
        removed += files::remove_stale_temps(dir).await;
        removed += orphans::sweep(
            &self.store,
            dir,
            before,
            &self.orphans,
            orphans::CHECKS_PER_SWEEP,
        )
        .await?;
        Ok(removed)
    }
}

/// Deletes the file `hash` under `dir`: 1 when it went, 0 when it was gone
/// already or could not be removed (logged).
async fn remove(dir: &Path, hash: &str) -> usize {
    match tokio::fs::remove_file(files::path_of(dir, hash)).await {
        Ok(()) => 1,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => {
            tracing::warn!(error = %e, "could not remove a media file");
            0
        }
    }
}
