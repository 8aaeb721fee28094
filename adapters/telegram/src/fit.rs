//! Markdown cut into chunks whose rendered HTML fits Telegram's limit.
//!
//! Chunks are planned on the Markdown, but Telegram counts the visible text
//! after parsing our HTML, which can be longer (see `render`). A chunk whose
//! visible text is over the limit is cut again with a limit shrunk in
//! proportion, until every piece fits.

use crate::render::{markdown_to_html, visible_len};
use switchboard_platform::{chunk_markdown, measure, LengthUnit};

/// Pieces this short are not cut again: rendering never grows text anywhere
/// near `max / MIN_LIMIT` times, and if it did, such a piece goes out as plain
/// text (see `send::render`), which fits as its Markdown does.
const MIN_LIMIT: usize = 256;

/// Telegram's count of `markdown` once rendered, in UTF-16 units.
fn rendered_len(markdown: &str) -> usize {
    visible_len(&markdown_to_html(markdown))
}

/// Whether `markdown` goes out as one message of at most `max` UTF-16 units,
/// in Markdown and rendered.
pub(crate) fn fits(markdown: &str, max: usize) -> bool {
    measure(markdown, LengthUnit::Utf16) <= max && rendered_len(markdown) <= max
}

/// `markdown` in chunks of at most `max` UTF-16 units, in Markdown and (but
/// for pieces of [`MIN_LIMIT`] units or less) rendered; in order, nothing lost.
pub(crate) fn fitting_chunks(markdown: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    // (chunk, the limit it was cut with); the next chunk on top.
    let mut todo: Vec<(String, usize)> = chunk_markdown(markdown, max, LengthUnit::Utf16)
        .into_iter()
        .rev()
        .map(|chunk| (chunk, max))
        .collect();
    while let Some((chunk, limit)) = todo.pop() {
        let shown = rendered_len(&chunk);
        if shown <= max || limit <= MIN_LIMIT {
            out.push(chunk);
            continue;
        }
        // As dense as this chunk is, pieces this long render within `max`;
        // denser spots are cut again. The limit shrinks every round, so this
        // ends at `MIN_LIMIT` at the latest.
        let len = measure(&chunk, LengthUnit::Utf16);
        let smaller = (len * max / shown).max(MIN_LIMIT).min(limit - 1);
        tracing::debug!(
            markdown = len,
            rendered = shown,
            limit = smaller,
            "a chunk renders over Telegram's limit; cutting it again"
        );
        todo.extend(
            chunk_markdown(&chunk, smaller, LengthUnit::Utf16)
                .into_iter()
                .rev()
                .map(|piece| (piece, smaller)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::visible_text;

    /// Paragraphs each followed by a short list (every list gains a blank
    /// line when rendered), as many as fit in `max` units of Markdown.
    fn dense(max: usize) -> (String, usize) {
        let mut md = String::new();
        for i in 0.. {
            let block = format!("Step {i}\n- a{i}\n- b{i}\n\n");
            if measure(&md, LengthUnit::Utf16) + measure(&block, LengthUnit::Utf16) > max {
                return (md, i);
            }
            md.push_str(&block);
        }
        (md, 0)
    }

    #[test]
    fn chunks_that_render_too_long_are_cut_again() {
        let (md, blocks) = dense(4096);
        assert!(rendered_len(&md) > 4096, "the sample must render too long");
        assert!(!fits(&md, 4096));
        let chunks = fitting_chunks(&md, 4096);
        assert!(chunks.len() >= 2);
        for chunk in &chunks {
            assert!(fits(chunk, 4096), "{} units", rendered_len(chunk));
        }
        let shown: Vec<String> = chunks
            .iter()
            .map(|c| visible_text(&markdown_to_html(c)))
            .collect();
        let all = shown.join("\n\n");
        let mut at = 0;
        for i in 0..blocks {
            let needle = format!("Step {i}\n\n• a{i}\n• b{i}");
            let found = all[at..].find(&needle);
            assert!(found.is_some(), "block {i} missing or out of order");
            at += found.unwrap_or_default() + needle.len();
        }
    }

    #[test]
    fn text_that_fits_stays_one_chunk() {
        let (md, _) = dense(1000);
        assert!(fits(&md, 4096));
        assert_eq!(fitting_chunks(&md, 4096), [md.trim_end_matches('\n')]);
    }

    #[test]
    fn tiny_limits_end_at_the_minimum() {
        // Every piece grows when rendered; the cutting still ends.
        let lazy: String = (0..2_000).map(|_| "1. x\n").collect();
        let chunks = fitting_chunks(&lazy, 300);
        assert!(!chunks.is_empty());
        assert!(chunks.iter().all(|c| measure(c, LengthUnit::Utf16) <= 300));
        let items: usize = chunks.iter().map(|c| c.matches("x").count()).sum();
        assert_eq!(items, 2_000, "nothing lost");
    }
}
