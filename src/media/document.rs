//! Documents for the model: text files read (lossily, bounded), PDFs' text
//! extracted page by page, and either inlined or — above the inline budget —
//! stored like a large tool result with a preview in the conversation.

use std::path::Path;
use tokio::io::AsyncReadExt;

/// The most text kept from one document (beyond it the model is told it was cut).
pub const MAX_TEXT_CHARS: usize = 2_000_000;
/// The most pages of a PDF read.
const MAX_PDF_PAGES: u32 = 1_000;

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

/// The text of a PDF, each page headed `--- page N ---`. Blocking.
pub fn pdf_text(path: &Path) -> Result<Text, String> {
    let doc = lopdf::Document::load(path).map_err(|e| e.to_string())?;
    if doc.is_encrypted() {
        return Err("it is encrypted".into());
    }
    let mut out = String::new();
    for (&number, _) in doc.get_pages().iter().take(MAX_PDF_PAGES as usize) {
        let page = doc.extract_text(&[number]).unwrap_or_default();
        out.push_str(&format!("--- page {number} ---\n{}\n", page.trim()));
        if out.len() > MAX_TEXT_CHARS * 4 {
            break;
        }
    }
    Ok(cap(&out))
}

fn cap(text: &str) -> Text {
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

    #[test]
    fn a_pdf_has_its_pages_marked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q3.pdf");
        std::fs::write(&path, sample_pdf(&["Revenue rose 12%", "Costs fell"])).unwrap();
        let t = pdf_text(&path).unwrap();
        assert!(
            t.text.contains("--- page 1 ---\nRevenue rose 12%"),
            "{}",
            t.text
        );
        assert!(t.text.contains("--- page 2 ---\nCosts fell"), "{}", t.text);
        std::fs::write(&path, b"%PDF-1.4 broken").unwrap();
        assert!(pdf_text(&path).is_err());
    }

    /// A minimal PDF with one line of Helvetica text per page.
    pub(crate) fn sample_pdf(pages: &[&str]) -> Vec<u8> {
        use lopdf::content::{Content, Operation};
        use lopdf::{dictionary, Document, Object, Stream};
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
        let mut kids = Vec::new();
        for text in pages {
            let content = Content {
                operations: vec![
                    Operation::new("BT", vec![]),
                    Operation::new("Tf", vec!["F1".into(), 12.into()]),
                    Operation::new("Td", vec![72.into(), 720.into()]),
                    Operation::new("Tj", vec![Object::string_literal(*text)]),
                    Operation::new("ET", vec![]),
                ],
            };
            let stream = doc.add_object(Stream::new(
                dictionary! {},
                content.encode().unwrap_or_default(),
            ));
            let page = doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => stream,
                "Resources" => resources, "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            });
            kids.push(page.into());
        }
        let count = kids.len() as i64;
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }
}
