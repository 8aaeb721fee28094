//! Telegram's UTF-16 entity offsets → byte ranges of the text. A message
//! may carry thousands of entities: [`Utf16Index`] maps the text once, so
//! converting all of them is linear instead of one scan from the start each.
//!
//! Entities are untrusted input: an offset past the end or inside a
//! surrogate pair gives `None`, never a panic.

use std::ops::Range;

/// Marks a UTF-16 position inside a surrogate pair (no byte boundary there).
const INSIDE_PAIR: u32 = u32::MAX;

/// The byte offset of every UTF-16 position of a text, end included.
#[derive(Debug)]
pub(crate) struct Utf16Index {
    /// `bytes[unit]` is the byte offset where UTF-16 unit `unit` starts.
    bytes: Vec<u32>,
}

impl Utf16Index {
    /// One pass over `text`. Texts past 4 GiB (never a Telegram message)
    /// map only their first 4 GiB.
    pub fn new(text: &str) -> Self {
        let mut bytes = Vec::with_capacity(text.len() + 1);
        for (i, c) in text.char_indices() {
            let Ok(at) = u32::try_from(i) else {
                return Self { bytes };
            };
            bytes.push(at);
            if c.len_utf16() == 2 {
                bytes.push(INSIDE_PAIR);
            }
        }
        if let Ok(end) = u32::try_from(text.len()) {
            bytes.push(end);
        }
        Self { bytes }
    }

    /// The byte offset of UTF-16 position `unit`, if it is a character boundary.
    pub fn byte(&self, unit: usize) -> Option<usize> {
        match *self.bytes.get(unit)? {
            INSIDE_PAIR => None,
            at => usize::try_from(at).ok(),
        }
    }

    /// The byte range of the UTF-16 span `offset..offset + length`.
    pub fn range(&self, offset: usize, length: usize) -> Option<Range<usize>> {
        let end = offset.checked_add(length)?;
        Some(self.byte(offset)?..self.byte(end)?)
    }
}

/// One span without an index: scans only up to the span's end, for a single
/// entity near the start (a command at offset 0).
pub(crate) fn utf16_range(text: &str, offset: usize, length: usize) -> Option<Range<usize>> {
    let end16 = offset.checked_add(length)?;
    let (mut start, mut end) = (None, None);
    let mut units = 0;
    for (i, c) in text.char_indices().chain([(text.len(), '\0')]) {
        if units == offset {
            start = Some(i);
        }
        if units == end16 {
            end = Some(i);
            break;
        }
        if units > end16 {
            break;
        }
        units += c.len_utf16();
    }
    Some(start?..end?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both ways agree, on every span of `text`.
    fn agree(text: &str) {
        let index = Utf16Index::new(text);
        let units = text.encode_utf16().count();
        for offset in 0..=units + 2 {
            for length in 0..=units + 2 - offset {
                assert_eq!(
                    index.range(offset, length),
                    utf16_range(text, offset, length),
                    "{text:?} {offset}+{length}"
                );
            }
        }
    }

    #[test]
    fn surrogate_pairs_count_two_units() {
        let index = Utf16Index::new("a😀b");
        assert_eq!(index.range(0, 1), Some(0..1));
        assert_eq!(index.range(1, 2), Some(1..5), "the emoji");
        assert_eq!(index.range(3, 1), Some(5..6));
        assert_eq!(index.range(4, 0), Some(6..6), "the end");
        assert_eq!("a😀b".get(1..5), Some("😀"));
    }

    #[test]
    fn offsets_inside_a_pair_are_refused() {
        let index = Utf16Index::new("a😀b");
        assert_eq!(index.byte(2), None);
        assert_eq!(index.range(2, 1), None, "starts inside the emoji");
        assert_eq!(index.range(1, 1), None, "ends inside the emoji");
    }

    #[test]
    fn out_of_range_offsets_are_refused_not_panicking() {
        let index = Utf16Index::new("ab");
        assert_eq!(index.range(1, 5), None, "past the end");
        assert_eq!(index.range(3, 0), None);
        assert_eq!(index.range(usize::MAX, 1), None, "overflow");
        assert_eq!(index.range(1, usize::MAX), None, "overflow");
        assert_eq!(Utf16Index::new("").range(0, 0), Some(0..0));
        assert_eq!(utf16_range("ab", usize::MAX, 1), None);
    }

    #[test]
    fn multibyte_text_maps_like_the_scan() {
        for text in [
            "",
            "plain",
            "héllo wörld",
            "日本語 @bot",
            "😀😀x😀",
            "a\u{10FFFF}\u{7FF}\u{800}",
        ] {
            agree(text);
        }
    }
}
