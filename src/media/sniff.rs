//! What a file really is, read from its first bytes: the name and the type
//! the sender's app reported are not trusted.

/// The content classes media handling treats differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// PNG, JPEG, GIF or WebP: decoded, resized and shown to the model.
    Image(&'static str),
    Audio(&'static str),
    Video(&'static str),
    Pdf,
    /// UTF-8 text without NUL bytes (CSV, code, logs, Markdown, JSON, …).
    Text,
    /// Anything else, with its sniffed type when known.
    Binary(Option<&'static str>),
}

/// The images the gateway decodes.
const IMAGES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Classifies a file by its first bytes (`head`: at least the first 8 KB,
/// or the whole file when shorter).
pub fn classify(head: &[u8]) -> Content {
    if let Some(kind) = infer::get(head) {
        let mime = kind.mime_type();
        return match kind.matcher_type() {
            infer::MatcherType::Image if IMAGES.contains(&mime) => Content::Image(mime),
            infer::MatcherType::Audio => Content::Audio(mime),
            infer::MatcherType::Video => Content::Video(mime),
            _ if mime == "application/pdf" => Content::Pdf,
            _ => Content::Binary(Some(mime)),
        };
    }
    if looks_like_text(head) {
        Content::Text
    } else {
        Content::Binary(None)
    }
}

/// Valid UTF-8 (a character cut at the end of `head` allowed) without NULs.
fn looks_like_text(head: &[u8]) -> bool {
    if head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && head.len() - e.valid_up_to() < 4,
    }
}

/// A short human name of a sniffed type, for messages: `a ZIP archive`.
pub fn describe(content: Content) -> String {
    match content {
        Content::Image(m) | Content::Audio(m) | Content::Video(m) => format!("a {m} file"),
        Content::Pdf => "a PDF".into(),
        Content::Text => "text".into(),
        Content::Binary(Some("application/zip")) => "a ZIP archive".into(),
        Content::Binary(Some(m)) => format!("a {m} file"),
        Content::Binary(None) => "binary data".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_come_from_the_bytes() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(classify(png), Content::Image("image/png"));
        assert_eq!(
            classify(b"\xff\xd8\xff\xe0\0\x10JFIF"),
            Content::Image("image/jpeg")
        );
        assert_eq!(
            classify(b"PK\x03\x04\x14\0\0\0"),
            Content::Binary(Some("application/zip"))
        );
        assert_eq!(classify(b"%PDF-1.7\n"), Content::Pdf);
        assert_eq!(
            classify(b"OggS\0\x02\0\0\0\0\0\0\0\0"),
            Content::Audio("audio/ogg")
        );
        assert_eq!(classify("name,city\nZoë,Köln\n".as_bytes()), Content::Text);
        assert_eq!(
            classify(&"é".as_bytes()[..1]),
            Content::Text,
            "a cut character"
        );
        assert_eq!(classify(b"a\0b"), Content::Binary(None));
        assert_eq!(
            describe(Content::Binary(Some("application/zip"))),
            "a ZIP archive"
        );
    }
}
