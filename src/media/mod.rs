//! Media: files users send, taken in for the model, and kept bounded.
//!
//! An attachment is downloaded through its adapter (size-capped, streamed to
//! disk), filed by content hash under `DATA_DIR/media`, checked by its bytes,
//! copied into the workspace for tools, and turned into what the model can
//! use: an image part, a transcript, a document's text, or a note saying
//! where the file is. Everything refused is said to the user plainly.

mod config;
mod document;
pub mod files;
mod image;
mod intake;
mod notes;
mod sniff;
mod stt;

pub use config::{MediaConfig, SttConfig, VisionSetting};
pub use intake::Intake;
pub use sniff::{classify, Content};

use crate::store::Store;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Media handling of a running gateway (one per process).
#[derive(Debug)]
pub struct Media {
    config: MediaConfig,
    store: Store,
    http: reqwest::Client,
    /// Where large documents are stored for `read_stored_result`.
    data_dir: PathBuf,
    /// Whether images go to the model: from the setting and the model name,
    /// switched off for the run when the endpoint refuses image parts.
    vision: Arc<AtomicBool>,
}

impl Media {
    pub fn new(config: MediaConfig, store: Store, data_dir: PathBuf, model: &str) -> Media {
        let vision = Arc::new(AtomicBool::new(config.vision_for(model)));
        Media {
            config,
            store,
            http: reqwest::Client::new(),
            data_dir,
            vision,
        }
    }

    /// Whether images currently reach the model.
    pub fn sees_images(&self) -> bool {
        self.vision.load(Ordering::Relaxed)
    }

    /// What the agent loads images through (shares the vision switch).
    pub fn images(&self) -> crate::agent::Images {
        crate::agent::Images {
            dir: self.config.dir.clone(),
            keep_turns: self.config.image_turns,
            enabled: Arc::clone(&self.vision),
        }
    }

    /// Sweeps at start and then hourly until `shutdown`.
    pub async fn sweep_hourly(self: Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
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
    pub async fn sweep(&self) -> Result<usize, crate::store::StoreError> {
        let retention = i64::from(self.config.retention_days) * 86_400_000;
        let before = crate::store::now() - retention;
        let mut removed = 0;
        loop {
            let batch = self.store.media_unused_since(before, 200).await?;
            if batch.is_empty() {
                break;
            }
            for hash in &batch {
                if self.store.media_forget(hash, before).await? {
                    match tokio::fs::remove_file(files::path_of(&self.config.dir, hash)).await {
                        Ok(()) => removed += 1,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => tracing::warn!(error = %e, "could not remove a media file"),
                    }
                }
            }
            if batch.len() < 200 {
                break;
            }
        }
        self.store.media_prune_downloads().await?;
        removed += files::remove_stale_temps(&self.config.dir).await;
        Ok(removed)
    }
}
