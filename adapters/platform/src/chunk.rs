//! Splitting Markdown into platform-sized chunks on paragraph, line and
//! code-fence boundaries, measured in the platform's own unit.

use crate::adapter::LengthUnit;

/// Shortest fence marker: three backticks or three tildes.
const MIN_FENCE: usize = 3;

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
/// boundary (never inside a UTF-16 surrogate pair). A code fence (``` or ~~~,
/// any length) open at a cut is closed with its own marker at the end of its
/// chunk and reopened, with its info string, at the start of the next one, so
/// every chunk renders on its own.
pub fn chunk_markdown(text: &str, limit: usize, unit: LengthUnit) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut rest = text.trim_matches('\n');
    let mut open_fence: Option<Fence> = None;

    while !rest.is_empty() {
        let prefix = open_fence
            .as_ref()
            .map(|f| format!("{}\n", f.opener))
            .unwrap_or_default();
        let prefix_len = measure(&prefix, unit);
        // Room for "\n" plus the longest marker that may need closing here.
        let fence_reserve = 1 + longest_fence(rest).max(open_fence.as_ref().map_or(0, |f| f.len));
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
            if let Some(fence) = &open_fence {
                chunk.push('\n');
                chunk.extend(std::iter::repeat_n(fence.marker, fence.len));
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

/// A code fence still open: the line that opened it (reopened as is) and its
/// marker, which only a line of at least as many of the same character closes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fence {
    opener: String,
    marker: char,
    len: usize,
}

/// A fence line's marker character, its length and what follows it.
fn fence_marker(line: &str) -> Option<(char, usize, &str)> {
    let trimmed = line.trim_start();
    let marker = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let after = trimmed.trim_start_matches(marker);
    // Both markers are one byte, so bytes count characters.
    let len = trimmed.len() - after.len();
    (len >= MIN_FENCE).then_some((marker, len, after))
}

/// The longest fence marker in `text` (at least [`MIN_FENCE`]).
fn longest_fence(text: &str) -> usize {
    text.lines()
        .filter_map(fence_marker)
        .map(|(_, len, _)| len)
        .fold(MIN_FENCE, usize::max)
}

/// Tracks fences line by line (CommonMark's rules): returns the fence still
/// open after `piece`.
fn fence_state_after(piece: &str, mut open: Option<Fence>) -> Option<Fence> {
    for line in piece.lines() {
        let Some((marker, len, after)) = fence_marker(line) else {
            continue;
        };
        open = match open {
            Some(f) if marker == f.marker && len >= f.len && after.trim().is_empty() => None,
            Some(f) => Some(f),
            // A backtick "fence" with a backtick in its info string is inline code.
            None if marker == '`' && after.contains('`') => None,
            None => Some(Fence {
                opener: line.trim().to_owned(),
                marker,
                len,
            }),
        };
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fences_balanced(chunk: &str) -> bool {
        fence_state_after(chunk, None).is_none()
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

    #[test]
    fn tilde_and_long_fences_are_closed_with_their_own_marker() {
        let code: String = (0..100).map(|i| format!("x{i} = {i}\n")).collect();
        let text = format!("Intro\n\n~~~python\n{code}~~~\n\nOutro");
        let chunks = chunk_markdown(&text, 200, LengthUnit::Chars);
        assert!(chunks.len() > 3);
        for c in &chunks {
            assert!(measure(c, LengthUnit::Chars) <= 200, "{c}");
            assert!(fences_balanced(c), "unbalanced: {c}");
            assert!(!c.contains("```"), "closed with the wrong marker: {c}");
        }
        assert!(chunks[1].starts_with("~~~python\n") && chunks[1].ends_with("\n~~~"));

        // A four-backtick fence quoting ``` lines: those do not close it.
        let quoted: String = (0..40).map(|i| format!("```\nline {i}\n```\n")).collect();
        let text = format!("````markdown\n{quoted}````\n\nafter");
        let chunks = chunk_markdown(&text, 120, LengthUnit::Chars);
        for c in &chunks {
            assert!(measure(c, LengthUnit::Chars) <= 120, "{c}");
            assert!(fences_balanced(c), "unbalanced: {c}");
        }
        assert!(chunks[1].starts_with("````markdown\n"));
        assert!(chunks[0].ends_with("\n````"));
        assert!(chunks.last().is_some_and(|c| c.ends_with("after")));
    }

    #[test]
    fn fence_tracking_follows_commonmark() {
        let open = |text: &str| fence_state_after(text, None).map(|f| f.opener);
        assert_eq!(open("~~~rust\nlet x;"), Some("~~~rust".to_owned()));
        assert_eq!(open("~~~\ncode\n```\nstill code"), Some("~~~".to_owned()));
        assert_eq!(open("````\n```\n````"), None);
        assert_eq!(open("```js\ncode\n```js"), Some("```js".to_owned()));
        assert_eq!(open("``` inline ` code"), None);
        assert_eq!(open("~~\nnot a fence"), None);
    }
}
