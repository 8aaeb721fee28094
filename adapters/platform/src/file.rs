//! Outbound files: a document or photo sent to a chat with an optional caption.

use crate::ids::ChatAddress;

/// How the platform should present a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Any file, shown as a download (Telegram `sendDocument`).
    Document,
    /// An image shown inline (Telegram `sendPhoto`).
    Photo,
}

/// A file to send: where, under which name, with which caption.
#[derive(Clone, PartialEq, Eq)]
pub struct OutgoingFile {
    /// The chat, thread or topic it goes to.
    pub to: ChatAddress,
    /// The name shown to the user, e.g. `command.txt`.
    pub name: String,
    /// Plain text shown with the file; short (Telegram allows 1,024 characters).
    pub caption: Option<String>,
    pub bytes: Vec<u8>,
    pub kind: FileKind,
}

impl OutgoingFile {
    /// A document named `name` holding `bytes`, without a caption.
    pub fn document(to: ChatAddress, name: impl Into<String>, bytes: Vec<u8>) -> OutgoingFile {
        OutgoingFile {
            to,
            name: name.into(),
            caption: None,
            bytes,
            kind: FileKind::Document,
        }
    }

    pub fn with_caption(mut self, caption: impl Into<String>) -> OutgoingFile {
        self.caption = Some(caption.into());
        self
    }
}

/// The bytes are left out: a file can be megabytes of user data.
impl std::fmt::Debug for OutgoingFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutgoingFile")
            .field("to", &self.to)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}
