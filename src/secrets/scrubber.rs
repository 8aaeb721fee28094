//! Replacing known secret values in text with `[REDACTED]` (one Aho-Corasick pass).

use aho_corasick::{AhoCorasick, MatchKind};
use std::borrow::Cow;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this are never registered: scrubbing `true` or `1234`
/// out of every message would mangle ordinary text.
pub const MIN_SECRET_LEN: usize = 8;

/// A set of secret values and the automaton finding them.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    values: Vec<String>,
    automaton: Option<AhoCorasick>,
    max_len: usize,
}

impl Scrubber {
    /// A scrubber for `values`; those shorter than [`MIN_SECRET_LEN`] are skipped.
    pub fn new<I, S>(values: I) -> Scrubber
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut values: Vec<String> = values
            .into_iter()
            .map(Into::into)
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect();
        values.sort();
        values.dedup();
        let automaton = if values.is_empty() {
            None
        } else {
            // Leftmost-longest: a URL containing a password is replaced whole.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&values)
                .ok()
        };
        let max_len = values.iter().map(String::len).max().unwrap_or(0);
        Scrubber {
            values,
            automaton,
            max_len,
        }
    }

    /// This scrubber with `more` values added.
    pub fn with<I, S>(&self, more: I) -> Scrubber
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Scrubber::new(
            self.values
                .iter()
                .cloned()
                .chain(more.into_iter().map(Into::into)),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The length in bytes of the longest secret.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when none occurs.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.automaton {
            Some(ac) if ac.is_match(text) => {
                Cow::Owned(ac.replace_all(text, &vec![REDACTED; self.values.len()]))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// The length of the longest suffix of `text` that is the start of some
    /// secret (a secret that may complete with the next chunk).
    pub(crate) fn partial_suffix(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        let longest = self.max_len.saturating_sub(1).min(bytes.len());
        (1..=longest)
            .rev()
            .find(|&n| {
                let at = bytes.len() - n;
                text.is_char_boundary(at)
                    && self
                        .values
                        .iter()
                        .any(|v| v.as_bytes().starts_with(&bytes[at..]))
            })
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_of_every_secret_is_replaced_and_short_values_are_ignored() {
        let s = Scrubber::new(["sk-live-abcdef", "bot-token-123", "short"]);
        assert_eq!(
            s.scrub("k=sk-live-abcdef t=bot-token-123 k2=sk-live-abcdef short"),
            "k=[REDACTED] t=[REDACTED] k2=[REDACTED] short"
        );
        assert!(matches!(s.scrub("nothing here"), Cow::Borrowed(_)));
        assert!(Scrubber::new(["tiny"]).is_empty());
    }

    #[test]
    fn the_longest_secret_wins_where_they_overlap() {
        let s = Scrubber::new(["hunter2hunter2", "postgres://app:hunter2hunter2@db/sb"]);
        assert_eq!(
            s.scrub("url postgres://app:hunter2hunter2@db/sb end"),
            "url [REDACTED] end"
        );
    }

    #[test]
    fn a_partial_suffix_is_the_longest_start_of_a_secret() {
        let s = Scrubber::new(["sk-live-abcdef"]);
        assert_eq!(s.partial_suffix("the key is sk-li"), 5);
        assert_eq!(s.partial_suffix("the key is s"), 1);
        assert_eq!(s.partial_suffix("the key is x"), 0);
        assert_eq!(s.partial_suffix("é"), 0);
    }
}
