//! Media: files users send, taken in for the model, and kept bounded.
//!
//! An attachment is downloaded through its adapter (size-capped, streamed to
//! disk), filed by content hash under `DATA_DIR/media`, checked by its bytes,
//! copied into the sender's workspace folder for tools, and turned into what the model can
//! use: an image part, a transcript, a document's text, or a note saying
//! where the file is. Everything refused is said to the user plainly.
//! Images a tool produced are filed the same way (`produced`). Every file
//! filed is recorded in the store, and an hourly sweep collects those unused
//! past the retention (`sweep`), and leftovers no row records (`orphans`).
//! PDFs are parsed by a process of their own with limits (`reader`, `pdf`):
//! a hostile document can crash or exhaust that process, not the gateway.

mod vision;
pub(crate) use vision::without_images;
pub use vision::Images;
mod config;
mod document;
pub mod files;
mod image;
mod intake;
mod notes;
mod orphans;
mod pdf;
mod produced;
mod reader;
mod sniff;
mod stt;
mod sweep;
mod tts;

pub use config::{MediaConfig, ReaderConfig, SttConfig, TtsConfig, VisionSetting};
pub use document::{Text, MAX_TEXT_CHARS};
pub use intake::Intake;
pub use pdf::{Limits as DocumentLimits, Refusal as DocumentRefusal};
pub use produced::{file_produced_image, ProducedImageError, MAX_PRODUCED_BYTES};
pub use reader::{
    own_binary, serve as serve_reader, DocumentReader, ProcessLimits, ReadError, SUBCOMMAND,
};
pub use sniff::{classify, Content};
pub use tts::{TtsError, TTS_MAX_INPUT_CHARS, TTS_MAX_OUTPUT_BYTES};

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
    /// Where the sweep's scan for unrecorded files goes on.
    orphans: orphans::Cursor,
    /// Where copies for tools land: each sender's own folder of it.
    workspace: Arc<crate::workspace::Workspace>,
    /// Reads PDFs in a process of its own.
    reader: DocumentReader,
}

impl Media {
    pub fn new(
        config: MediaConfig,
        store: Store,
        data_dir: PathBuf,
        model: &str,
        workspace: Arc<crate::workspace::Workspace>,
    ) -> Media {
        let vision = Arc::new(AtomicBool::new(config.vision_for(model)));
        let reader = DocumentReader::new(&config.reader);
        Media {
            reader,
            config,
            store,
            http: reqwest::Client::new(),
            data_dir,
            vision,
            orphans: orphans::Cursor::default(),
            workspace,
        }
    }

    /// Whether images currently reach the model.
    pub fn sees_images(&self) -> bool {
        self.vision.load(Ordering::Relaxed)
    }

    /// What the agent loads images through (shares the vision switch).
    pub fn images(&self) -> Images {
        Images {
            dir: self.config.dir.clone(),
            store: self.store.clone(),
            keep_turns: self.config.image_turns,
            enabled: Arc::clone(&self.vision),
        }
    }
}
