//! A PDF's text, read where a hostile document can do no harm: this runs in
//! the document reader's own process (`switchboard extract-document`, see
//! `reader`), never in the gateway. Before `lopdf` parses anything the bytes
//! are scanned (nesting depth, object count, encryption, what each Flate
//! stream inflates to); while it loads, every stream is decoded within the
//! document's budget before `lopdf` would decode it unbounded; each page's
//! content is scanned again before it is parsed. What slips past these
//! checks meets the process's memory and CPU limits.

mod decode;
mod load;
mod scan;

use super::document::{cap, Text};
use decode::Budget;
use std::path::Path;

/// The most pages of a PDF read.
const MAX_PDF_PAGES: usize = 1_000;

/// What one document may need, besides the reader process's memory and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Arrays and dictionaries inside one another (a parser recurses once
    /// per level: 100,000 levels overflow its stack).
    pub max_depth: usize,
    /// Objects in the file, those packed in object streams included.
    pub max_objects: u64,
    /// Bytes the document's streams may decode to, in all.
    pub max_inflated: u64,
}

/// Nesting deeper than this is refused.
pub const DEFAULT_MAX_DEPTH: usize = 256;
/// More objects than this are refused.
pub const DEFAULT_MAX_OBJECTS: u64 = 1_000_000;

impl Limits {
    /// The default depth and object count, and `max_inflated` bytes decoded.
    pub fn new(max_inflated: u64) -> Limits {
        Limits {
            max_depth: DEFAULT_MAX_DEPTH,
            max_objects: DEFAULT_MAX_OBJECTS,
            max_inflated,
        }
    }
}

/// Why the reader refused a document, found by its own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Encrypted,
    TooDeep,
    TooManyObjects,
    /// Its streams decode to more than the limit.
    TooLarge,
    /// The process's memory ran out (allocations that can fail did).
    OutOfMemory,
    /// `lopdf` could not read it, or stopped on it.
    Unreadable,
}

impl Refusal {
    const CODES: [(Refusal, &'static str); 6] = [
        (Refusal::Encrypted, "encrypted"),
        (Refusal::TooDeep, "too-deep"),
        (Refusal::TooManyObjects, "too-many-objects"),
        (Refusal::TooLarge, "too-large"),
        (Refusal::OutOfMemory, "out-of-memory"),
        (Refusal::Unreadable, "unreadable"),
    ];

    /// The word the reader process reports it by.
    pub fn code(self) -> &'static str {
        Self::CODES
            .iter()
            .find(|(r, _)| *r == self)
            .map_or("unreadable", |(_, c)| c)
    }

    /// The refusal a reader process reported, if `code` is one.
    pub fn from_code(code: &str) -> Option<Refusal> {
        Self::CODES
            .iter()
            .find(|(_, c)| *c == code)
            .map(|(r, _)| *r)
    }
}

/// The text of the PDF at `path`, each page headed `--- page N ---`, at
/// most [`super::document::MAX_TEXT_CHARS`]. Blocking, and to be called only
/// in a process that may die of the document (see the module's summary).
pub fn extract(path: &Path, limits: &Limits) -> Result<Text, Refusal> {
    let bytes = std::fs::read(path).map_err(|_| Refusal::Unreadable)?;
    let objects = scan::file(&bytes, limits, &mut Budget::new(limits.max_inflated))?;
    drop(bytes);
    let doc = load::load(path, limits, objects)?;
    if doc.is_encrypted() {
        return Err(Refusal::Encrypted);
    }
    let mut out = String::new();
    for (&number, &page) in doc.get_pages().iter().take(MAX_PDF_PAGES) {
        let content = doc.get_page_content(page).unwrap_or_default();
        scan::content(&content, limits)?;
        drop(content);
        let text = doc.extract_text(&[number]).unwrap_or_default();
        out.push_str(&format!("--- page {number} ---\n{}\n", text.trim()));
        if out.len() > super::document::MAX_TEXT_CHARS * 4 {
            break;
        }
    }
    Ok(cap(&out))
}

#[cfg(test)]
pub(crate) mod tests;
