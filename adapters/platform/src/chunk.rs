//! Splitting Markdown into platform-sized chunks on paragraph, line and
//! code-fence boundaries, measured in the platform's own unit.

use crate::adapter::LengthUnit;

const FENCE_CLOSE: &str = "\n```";

/// Length of `text` in `unit`.
pub fn measure(text: &str, unit: LengthUnit) -> usize {
    match unit {
        LengthUnit::Chars => text.chars().count(),
        LengthUnit::Utf16 => text.encode_utf16().count(),
    }
}

/// Splits `text` into chunks of at most `limit` units.
///
/// Cuts prefer a paragraph break, then a line break, then any character
/// boundary (never inside a UTF-16 surrogate pair). A code fence open at a cut is
/// closed at the end of its chunk and reopened, with its info string, at the start
/// of the next one, so every chunk renders on its own.
pub fn chunk_markdown(text: &str, limit: usize, unit: LengthUnit) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut rest = text.trim_matches('\n');
    let mut open_fence: Option<String> = None;
    let fence_reserve = measure(FENCE_CLOSE, unit);

    while !rest.is_empty() {
        let prefix = open_fence
            .as_ref()
            .map(|f| format!("{f}\n"))
            .unwrap_or_default();
        let prefix_len = measure(&prefix, unit);
        if prefix_len + measure(rest, unit) <= limit {
            chunks.push(format!("{prefix}{rest}"));
            break;
        }
        // Fences only matter when there is room for them; tiny limits get raw cuts.
        let fences = limit >= prefix_len + fence_reserve + 16;
        let budget = if fences {
            limit - prefix_len - fence_reserve
        } else {
            limit
        };
        let max = prefix_at_most(rest, budget, unit);
        let cut = best_cut(&rest[..max]);
        let piece = rest[..cut].trim_end_matches('\n');
        let mut chunk = if fences {
            format!("{prefix}{piece}")
        } else {
            piece.to_owned()
        };
        if fences {
            open_fence = fence_state_after(piece, open_fence);
            if open_fence.is_some() {
                chunk.push_str(FENCE_CLOSE);
            }
        }
        if !chunk.trim().is_empty() {
            chunks.push(chunk);
        }
        rest = rest[cut..].trim_start_matches('\n');
    }
    chunks
}

/// Byte length of the longest prefix of `text` that is at most `budget` units.
fn prefix_at_most(text: &str, budget: usize, unit: LengthUnit) -> usize {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = match unit {
            LengthUnit::Chars => 1,
            LengthUnit::Utf16 => c.len_utf16(),
        };
        if used + w > budget {
            // Always make progress, even when one character exceeds the budget.
            return if i == 0 { c.len_utf8() } else { i };
        }
        used += w;
    }
    text.len()
}

/// Where to cut inside `window`: after a paragraph break in its last 70%, else
/// after the last line break, else at the end of the window.
fn best_cut(window: &str) -> usize {
    let floor = window.len() * 3 / 10;
    if let Some(p) = window.rfind("\n\n").filter(|&p| p >= floor) {
        return p + 2;
    }
    if let Some(p) = window.rfind('\n').filter(|&p| p > 0) {
        return p + 1;
    }
    window.len().max(1)
}

/// Tracks ``` fences line by line: returns the opener line still open after `piece`.
fn fence_state_after(piece: &str, mut open: Option<String>) -> Option<String> {
    for line in piece.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            open = match open {
                Some(_) => None,
                None => Some(trimmed.trim_end().to_owned()),
            };
        }
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fences_balanced(chunk: &str) -> bool {
        chunk
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count()
            % 2
            == 0
    }

    #[test]
    fn short_text_is_one_chunk() {
        assert_eq!(
            chunk_markdown("hello", 10, LengthUnit::Chars),
            vec!["hello"]
        );
    }

    #[test]
    fn prefers_paragraph_boundaries() {
        let text = format!("{}\n\n{}", "a".repeat(60), "b".repeat(60));
        let chunks = chunk_markdown(&text, 100, LengthUnit::Chars);
        assert_eq!(chunks, vec!["a".repeat(60), "b".repeat(60)]);
    }

    #[test]
    fn falls_back_to_line_then_hard_cuts() {
        let text = format!("{}\n{}", "a".repeat(30), "b".repeat(250));
        let chunks = chunk_markdown(&text, 100, LengthUnit::Chars);
        assert!(chunks.iter().all(|c| measure(c, LengthUnit::Chars) <= 100));
        assert_eq!(chunks[0], "a".repeat(30));
        assert_eq!(chunks.concat(), text.replace('\n', ""));
    }

    #[test]
    fn split_fences_are_closed_and_reopened() {
        let code: String = (0..80).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Intro\n\n```rust\n{code}```\n\nOutro");
        let chunks = chunk_markdown(&text, 300, LengthUnit::Chars);
        assert!(chunks.len() > 3);
        for c in &chunks {
            assert!(measure(c, LengthUnit::Chars) <= 300, "{c}");
            assert!(fences_balanced(c), "unbalanced: {c}");
        }
        assert!(chunks[1].starts_with("```rust\n"));
        assert!(chunks.last().is_some_and(|c| c.ends_with("Outro")));
    }

    #[test]
    fn utf16_counts_emoji_as_two_units_and_never_splits_pairs() {
        let text = "😀".repeat(100);
        let chunks = chunk_markdown(&text, 51, LengthUnit::Utf16);
        assert!(chunks.iter().all(|c| measure(c, LengthUnit::Utf16) <= 51));
        assert_eq!(chunks.concat(), text);
        assert_eq!(measure("😀中", LengthUnit::Utf16), 3);
        assert_eq!(measure("😀中", LengthUnit::Chars), 2);
    }

    #[test]
    fn tiny_limits_still_make_progress() {
        let chunks = chunk_markdown("```\nabcdef\n```", 3, LengthUnit::Chars);
        assert!(chunks.iter().all(|c| measure(c, LengthUnit::Chars) <= 3));
        assert!(!chunks.is_empty());
    }
}
