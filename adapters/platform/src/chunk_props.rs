//! Property tests of the chunker (issue 18's fuzzing targets, run with a
//! bounded case count in the normal suite; `PROPTEST_CASES=100000` for a long
//! run): on any Markdown, every chunk fits the platform's limit in its unit,
//! every chunk's code fences are balanced, and no visible character is lost.

use crate::{chunk_markdown, measure, LengthUnit};
use proptest::prelude::*;

/// Markdown-like text: words, emoji, CJK, long unbroken runs, line and
/// paragraph breaks, and balanced code fences with an info string.
fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z]{1,12} ".prop_map(|s| s),
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("😀 ".to_owned()),
        Just("中文字符 ".to_owned()),
        "[a-z]{60,200}".prop_map(|s| s),
        "[a-z ]{0,80}".prop_map(|code| format!("\n```rust\n{code}\n{code}\n```\n")),
        Just("**bold** _it_ `code` ".to_owned()),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

fn fence_lines(chunk: &str) -> usize {
    chunk
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count()
}

/// The visible characters outside fence lines, in order.
fn visible(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .flat_map(str::chars)
        .filter(|c| !c.is_whitespace())
        .collect()
}

proptest! {

    #[test]
    fn chunks_fit_balance_their_fences_and_lose_nothing(
        text in markdownish(),
        limit in 40usize..600,
        utf16 in any::<bool>(),
    ) {
        let unit = if utf16 { LengthUnit::Utf16 } else { LengthUnit::Chars };
        let chunks = chunk_markdown(&text, limit, unit);
        for chunk in &chunks {
            prop_assert!(measure(chunk, unit) <= limit, "{} > {limit}: {chunk:?}", measure(chunk, unit));
            prop_assert!(fence_lines(chunk).is_multiple_of(2), "unbalanced fences: {chunk:?}");
        }
        prop_assert_eq!(visible(&chunks.join("\n")), visible(&text));
    }

    #[test]
    fn any_text_at_any_limit_never_panics(text in "\\PC{0,400}", limit in 1usize..64) {
        for unit in [LengthUnit::Chars, LengthUnit::Utf16] {
            for chunk in chunk_markdown(&text, limit.max(4), unit) {
                prop_assert!(measure(&chunk, unit) <= limit.max(4));
            }
        }
    }
}
