//! Search terms for memories: lowercase words for spaced scripts, overlapping
//! character bigrams for CJK and other scripts written without spaces, plus
//! the codes and ids in a message that deserve an exact match.
//!
//! Why bigrams rather than SQLite's `trigram` tokenizer: Chinese words are
//! mostly two characters (咖啡, 股票, 风险), which a trigram index cannot find
//! without a full scan, and a per-user scan of 100,000 rows misses the latency
//! target. Bigrams find every word of two or more characters through the index
//! and work the same on PostgreSQL. A lone character falls back to a bounded
//! substring scan (see `Memories::containing`).

use crate::llm::is_unsegmented;
use std::collections::HashSet;

/// Longest word kept as a term (longer runs are cut).
const MAX_WORD_CHARS: usize = 40;

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "does", "for", "from", "has",
    "have", "he", "her", "his", "i", "if", "in", "is", "it", "its", "me", "my", "no", "not", "of",
    "on", "or", "our", "she", "so", "that", "the", "their", "them", "there", "they", "this", "to",
    "was", "we", "were", "what", "when", "which", "who", "will", "with", "you", "your",
];

enum Class {
    Word,
    Dense,
    Separator,
}

/// Full-width ASCII forms (ｆｏｏ１２) read as ASCII.
fn fold_width(c: char) -> char {
    match u32::from(c) {
        0xFF01..=0xFF5E => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
        _ => c,
    }
}

fn class(c: char) -> Class {
    if is_unsegmented(c) {
        Class::Dense
    } else if c.is_alphanumeric() {
        Class::Word
    } else {
        Class::Separator
    }
}

/// The search terms of `text`, in order, duplicates kept (term frequency counts).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut dense: Vec<char> = Vec::new();
    for c in text.chars().map(fold_width).chain(std::iter::once(' ')) {
        match class(c) {
            Class::Word => {
                flush_dense(&mut dense, &mut out);
                word.extend(c.to_lowercase());
            }
            Class::Dense => {
                flush_word(&mut word, &mut out);
                dense.push(c);
            }
            Class::Separator => {
                flush_word(&mut word, &mut out);
                flush_dense(&mut dense, &mut out);
            }
        }
    }
    out
}

fn flush_word(word: &mut String, out: &mut Vec<String>) {
    let has_digit = word.chars().any(|c| c.is_ascii_digit());
    if (word.chars().count() >= 2 || has_digit) && !STOPWORDS.contains(&word.as_str()) {
        out.push(word.chars().take(MAX_WORD_CHARS).collect());
    }
    word.clear();
}

fn flush_dense(run: &mut Vec<char>, out: &mut Vec<String>) {
    match run.len() {
        0 => {}
        1 => out.push(run[0].to_string()),
        _ => out.extend(run.windows(2).map(|w| w.iter().collect::<String>())),
    }
    run.clear();
}

/// The distinct terms of a query, in order of first appearance.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    terms(text)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

/// Whether a term is a single character (only found by substring search).
pub fn is_single_char(term: &str) -> bool {
    term.chars().count() == 1
}

/// Code-like tokens of a message (stock codes, ticket and order ids: `600519`,
/// `00700.HK`, `JIRA-123`), matched exactly against memory contents.
pub fn codes(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let is_code_char =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | ':');
    for token in text.split(|c: char| !is_code_char(c)) {
        let token = token.trim_matches(|c: char| matches!(c, '.' | '-' | '_' | '/' | ':'));
        let len = token.len();
        if (3..=32).contains(&len)
            && token.chars().any(|c| c.is_ascii_digit())
            && !out.iter().any(|c| c == token)
        {
            out.push(token.to_owned());
        }
    }
    out
}

/// Memory ids the user points at: `#12`.
pub fn id_refs(text: &str) -> Vec<i64> {
    text.split('#')
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .take(5)
        .collect()
}

/// Jaccard similarity of the term sets of two texts (0.0 – 1.0).
pub fn similarity(a: &str, b: &str) -> f64 {
    let a: HashSet<String> = terms(a).into_iter().collect();
    let b: HashSet<String> = terms(b).into_iter().collect();
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let inter = a.intersection(&b).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_becomes_overlapping_bigrams_and_latin_words_lowercase() {
        assert_eq!(
            terms("用户喜欢喝咖啡"),
            ["用户", "户喜", "喜欢", "欢喝", "喝咖", "咖啡"]
        );
        assert_eq!(
            terms("I like Rust, the LANGUAGE"),
            ["like", "rust", "language"]
        );
        assert_eq!(terms("Rust语言 v2"), ["rust", "语言", "v2"]);
        assert_eq!(terms("猫"), ["猫"]);
    }

    #[test]
    fn other_unsegmented_scripts_and_full_width_forms() {
        assert_eq!(terms("東京タワー"), ["東京", "京タ", "タワ", "ワー"]);
        assert_eq!(terms("커피를"), ["커피", "피를"]);
        assert_eq!(terms("ＡＢＣ１２３"), ["abc123"]);
    }

    #[test]
    fn query_terms_are_distinct() {
        assert_eq!(query_terms("咖啡 咖啡 coffee Coffee"), ["咖啡", "coffee"]);
    }

    #[test]
    fn codes_and_ids_are_found() {
        assert_eq!(
            codes("看看600519和00700.HK，还有 JIRA-123."),
            ["600519", "00700.HK", "JIRA-123"]
        );
        assert!(codes("hello world 12").is_empty());
        assert_eq!(id_refs("forget #12 and #7x"), [12, 7]);
    }

    #[test]
    fn similar_texts_score_high() {
        assert!(similarity("用户喜欢喝咖啡", "用户喜欢喝咖啡。") > 0.99);
        assert!(similarity("用户喜欢喝咖啡", "用户很喜欢喝咖啡") > 0.6);
        assert!(similarity("用户喜欢喝咖啡", "用户讨厌下雨天") < 0.2);
        assert_eq!(similarity("", "x"), 0.0);
    }
}
