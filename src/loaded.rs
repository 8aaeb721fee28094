//! What the running gateway has loaded from the operator's files (live
//! reload): per file its path, when it was last loaded, what it holds and
//! the last refusal; shown by the web console and, through
//! `DATA_DIR/loaded.json`, by `switchboard doctor`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// The file (in `DATA_DIR`) the running gateway writes its status to.
pub const STATUS_FILE: &str = "loaded.json";

/// A value swapped whole on reload: readers take the current `Arc` and keep
/// it for as long as they need (a turn never sees half of two versions).
#[derive(Debug, Default)]
pub struct Live<T> {
    current: RwLock<Arc<T>>,
}

impl<T> Live<T> {
    pub fn new(value: T) -> Live<T> {
        Live {
            current: RwLock::new(Arc::new(value)),
        }
    }

    /// The value now.
    pub fn get(&self) -> Arc<T> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `value` in force for every later reader.
    pub fn set(&self, value: T) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(value);
    }
}

/// A file that was not taken, and why (the old settings stayed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub at: DateTime<Utc>,
    /// Names the file and, where the parser said, the line and column.
    pub message: String,
}

/// One source of settings as loaded now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStatus {
    /// The variable naming it (`CHATS_FILE`), or `model catalogue`.
    pub source: String,
    /// The file or directory (none: the database, or unset).
    pub path: Option<PathBuf>,
    pub loaded_at: DateTime<Utc>,
    /// What it holds, e.g. `3 chats`.
    pub items: String,
    /// The last time a new version was refused, if one was.
    pub refused: Option<Refusal>,
}

/// The whole picture, as written to [`STATUS_FILE`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedReport {
    /// The process that wrote it.
    pub pid: u32,
    pub sources: Vec<SourceStatus>,
}

/// Every source's status, kept up to date by the reloader.
#[derive(Debug)]
pub struct Loaded {
    sources: Mutex<Vec<SourceStatus>>,
    /// Where the report is written (none: nowhere, e.g. a test without one).
    file: Option<PathBuf>,
    /// Counts updates, for those who wait for a reload (tests, the console).
    updates: tokio::sync::watch::Sender<u64>,
}

impl Default for Loaded {
    fn default() -> Self {
        Loaded {
            sources: Mutex::new(Vec::new()),
            file: None,
            updates: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl Loaded {
    /// A board that writes its report to `DATA_DIR/loaded.json`.
    pub fn in_dir(data_dir: &Path) -> Loaded {
        Loaded {
            file: Some(data_dir.join(STATUS_FILE)),
            ..Loaded::default()
        }
    }

    /// Records that `source` was loaded now with `items`.
    pub fn loaded(&self, source: &str, path: Option<&Path>, items: String) {
        self.update(source, |s| {
            s.path = path.map(Path::to_path_buf);
            s.loaded_at = Utc::now();
            s.items = items;
        });
    }

    /// Records that a new version of `source` was refused with `message`.
    pub fn refused(&self, source: &str, message: String) {
        self.update(source, |s| {
            s.refused = Some(Refusal {
                at: Utc::now(),
                message,
            });
        });
    }

    fn update(&self, source: &str, change: impl FnOnce(&mut SourceStatus)) {
        let report = {
            let mut sources = self.sources.lock().unwrap_or_else(PoisonError::into_inner);
            let index = match sources.iter().position(|s| s.source == source) {
                Some(i) => i,
                None => {
                    sources.push(SourceStatus {
                        source: source.to_owned(),
                        path: None,
                        loaded_at: Utc::now(),
                        items: String::new(),
                        refused: None,
                    });
                    sources.len() - 1
                }
            };
            if let Some(s) = sources.get_mut(index) {
                change(s);
            }
            LoadedReport {
                pid: std::process::id(),
                sources: sources.clone(),
            }
        };
        if let Some(file) = &self.file {
            if let Err(e) = write_report(file, &report) {
                tracing::debug!(file = %file.display(), error = %e, "could not write the loaded-settings report");
            }
        }
        self.updates.send_modify(|n| *n += 1);
    }

    /// Changes with every load and refusal.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.updates.subscribe()
    }

    /// `source` as it is now.
    pub fn source(&self, source: &str) -> Option<SourceStatus> {
        self.snapshot().into_iter().find(|s| s.source == source)
    }

    /// Every source as it is now.
    pub fn snapshot(&self) -> Vec<SourceStatus> {
        self.sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Writes `report` whole (a reader never sees half of it).
fn write_report(file: &Path, report: &LoadedReport) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
    let partial = file.with_extension("json.partial");
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, file)
}

/// The report a gateway using `data_dir` wrote, if there is one.
pub fn read_report(data_dir: &Path) -> Option<LoadedReport> {
    let text = std::fs::read_to_string(data_dir.join(STATUS_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Reads `path` as JSON, strictly: an unreadable file or a syntax error is
/// a refusal naming `var`, the file, and the line and column.
pub fn strict_json(var: &str, path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{var} ({}): cannot read it: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{var} ({}): line {}, column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_syntax_error_names_the_file_the_line_and_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chats.json");
        std::fs::write(&path, "{\"chats\": {\n  \"console:1\": {,}\n}}").unwrap();
        let message = strict_json("CHATS_FILE", &path).unwrap_err();
        assert!(message.starts_with("CHATS_FILE ("), "{message}");
        assert!(message.contains("chats.json"), "{message}");
        assert!(message.contains("line 2, column 17"), "{message}");
    }

    #[test]
    fn the_report_is_written_and_read_back_with_the_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = Loaded::in_dir(dir.path());
        loaded.loaded("CHATS_FILE", Some(Path::new("/c.json")), "2 chats".into());
        loaded.refused("CHATS_FILE", "CHATS_FILE (/c.json): line 1".into());
        let report = read_report(dir.path()).unwrap();
        assert_eq!(report.pid, std::process::id());
        assert_eq!(report.sources.len(), 1);
        assert_eq!(report.sources[0].items, "2 chats");
        assert_eq!(
            report.sources[0].refused.as_ref().unwrap().message,
            "CHATS_FILE (/c.json): line 1"
        );
    }
}
