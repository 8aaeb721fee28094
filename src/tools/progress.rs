//! How a running (background) tool call reports its progress.

use tokio::sync::watch;

/// Progress of a running (background) tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub stage: String,
    pub detail: String,
    pub percent: Option<u8>,
}

impl Progress {
    /// One line for a chat: "research sub-agent — step 2: web_fetch (40%)".
    pub fn line(&self) -> String {
        let mut line = self.stage.clone();
        if !self.detail.is_empty() {
            if !line.is_empty() {
                line.push_str(" — ");
            }
            line.push_str(&self.detail);
        }
        if let Some(p) = self.percent {
            line.push_str(&format!(" ({p}%)"));
        }
        line
    }
}

/// Where a tool reports progress. Cheap to clone; a no-op for foreground calls.
#[derive(Debug, Clone, Default)]
pub struct ProgressSink(Option<watch::Sender<Progress>>);

impl ProgressSink {
    pub fn new(tx: watch::Sender<Progress>) -> Self {
        Self(Some(tx))
    }

    pub fn report(&self, progress: Progress) {
        if let Some(tx) = &self.0 {
            tx.send_replace(progress);
        }
    }
}
