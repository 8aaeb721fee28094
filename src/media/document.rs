//! Documents for the model: text files read (lossily, bounded) — PDFs' text
//! comes from the document reader process (`reader`) — and either inlined or,
//! above the inline budget, stored like a large tool result with a preview in
//! the conversation.

use std::path::Path;
use tokio::io::AsyncReadExt;

/// The most text kept from one document (beyond it the model is told it was cut).
pub const MAX_TEXT_CHARS: usize = 2_000_000;

/// A document's text, and whether it was cut at [`MAX_TEXT_CHARS`].
#[derive(Debug)]
pub struct Text {
    pub text: String,
    pub cut: bool,
}

/// Reads a text file, replacing invalid UTF-8, at most [`MAX_TEXT_CHARS`].
pub async fn read_text(path: &Path) -> std::io::Result<Text> {
    let file = tokio::fs::File::open(path).await?;
    // Four bytes per character at most: enough to fill the cap.
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_CHARS as u64 * 4)
        .read_to_end(&mut bytes)
        .await?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(cap(&text))
}

/// `text` cut at [`MAX_TEXT_CHARS`].
pub(crate) fn cap(text: &str) -> Text {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        None => Text {
            text: text.to_owned(),
            cut: false,
        },
        Some((at, _)) => Text {
            text: text[..at].to_owned(),
            cut: true,
        },
    }
}

/// How a document's text reaches the model.
#[derive(Debug, PartialEq, Eq)]
pub enum Shown {
    /// Whole, in the message.
    Inline(String),
    /// The first `inline` characters, the whole stored under `id` for
    /// `read_stored_result`.
    Preview { preview: String, total: usize },
}

/// Inline when within `inline` characters, else a preview.
pub fn show(text: &str, inline: usize) -> Shown {
    let total = text.chars().count();
    if total <= inline {
        return Shown::Inline(text.to_owned());
    }
    Shown::Preview {
        preview: text.chars().take(inline).collect(),
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_becomes_a_preview() {
        assert_eq!(show("abc", 3), Shown::Inline("abc".into()));
        assert_eq!(
            show("abcdé", 3),
            Shown::Preview {
                preview: "abc".into(),
                total: 5
            }
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.txt");
        std::fs::write(&path, b"ok \xff done").unwrap();
        let t = read_text(&path).await.unwrap();
        assert_eq!((t.text.as_str(), t.cut), ("ok \u{fffd} done", false));
    }
}
