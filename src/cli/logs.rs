//! Where the binary's logs go: stderr, coloured only on a terminal; for `chat`,
//! a file in DATA_DIR (kept under a size), so no warning lands in the
//! conversation — on a terminal, or piped with `2>&1` into one transcript.

use std::io::IsTerminal;
use std::path::Path;
use tracing_subscriber::fmt::writer::BoxMakeWriter;

/// The file `chat` logs to.
pub const CHAT_LOG: &str = "chat.log";

/// Past this size at start, `chat.log` becomes `chat.log.1` (replacing the
/// one before) and a new file begins: at most twice this on disk.
pub const CHAT_LOG_MAX_BYTES: u64 = 10 << 20;

/// Where log lines are written, and whether they carry colour codes.
pub struct LogTarget {
    pub writer: BoxMakeWriter,
    pub ansi: bool,
}

/// Stderr, with colour only when it is a terminal and `NO_COLOR` is unset; a
/// file or pipe gets plain text. `chat` logs to `DATA_DIR/chat.log` instead
/// (stderr if that file cannot be opened), rotated at start past
/// [`CHAT_LOG_MAX_BYTES`].
pub fn target(chat: bool, data_dir: &Path) -> LogTarget {
    let terminal = std::io::stderr().is_terminal();
    if chat {
        let path = data_dir.join(CHAT_LOG);
        rotate(&path, CHAT_LOG_MAX_BYTES);
        if let Some(file) = open_append(&path) {
            return LogTarget {
                writer: BoxMakeWriter::new(std::sync::Mutex::new(file)),
                ansi: false,
            };
        }
    }
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    LogTarget {
        writer: BoxMakeWriter::new(std::io::stderr),
        ansi: terminal && !no_color,
    }
}

/// Moves `path` to `path.1` when it is larger than `max` bytes (best effort:
/// a log that cannot be rotated keeps growing rather than stopping `chat`).
fn rotate(path: &Path, max: u64) {
    let big = std::fs::metadata(path).is_ok_and(|m| m.len() > max);
    if big {
        let mut old = path.as_os_str().to_owned();
        old.push(".1");
        let _ = std::fs::rename(path, old);
    }
}

fn open_append(path: &Path) -> Option<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).ok()?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_past_its_size_is_moved_aside_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(CHAT_LOG);
        std::fs::write(&log, vec![b'x'; 101]).unwrap();
        rotate(&log, 100);
        assert!(!log.exists());
        let previous = dir.path().join("chat.log.1");
        assert_eq!(std::fs::metadata(&previous).unwrap().len(), 101);
        // A small log stays where it is.
        std::fs::write(&log, b"short").unwrap();
        rotate(&log, 100);
        assert!(log.exists());
        assert_eq!(std::fs::metadata(&previous).unwrap().len(), 101);
    }
}
