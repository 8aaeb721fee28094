//! Where the binary's logs go: stderr, coloured only on a terminal; for `chat`
//! on a terminal, a file in DATA_DIR, so no warning lands in the conversation.

use std::io::IsTerminal;
use std::path::Path;
use tracing_subscriber::fmt::writer::BoxMakeWriter;

/// The file `chat` logs to when stderr is the terminal the conversation is on.
pub const CHAT_LOG: &str = "chat.log";

/// Where log lines are written, and whether they carry colour codes.
pub struct LogTarget {
    pub writer: BoxMakeWriter,
    pub ansi: bool,
}

/// Stderr, with colour only when it is a terminal and `NO_COLOR` is unset; a
/// file or pipe gets plain text. `chat` with stderr on a terminal logs to
/// `DATA_DIR/chat.log` instead (stderr if that file cannot be opened).
pub fn target(chat: bool, data_dir: &Path) -> LogTarget {
    let terminal = std::io::stderr().is_terminal();
    if chat && terminal {
        let path = data_dir.join(CHAT_LOG);
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
