//! The keyword/rule fallback of preference learning: stated preferences
//! ("I prefer …", "please always …", "我喜欢…", "以后都…") turned into
//! third-person preference sentences, without a model.

use regex::Regex;
use std::sync::LazyLock;

/// The confidence of a preference a rule found.
pub const RULE_CONFIDENCE: f64 = 0.5;
/// Longest object a rule keeps, in characters.
const MAX_OBJECT: usize = 100;

/// Triggers, each with the sentence it makes of the object that follows.
const RULES: &[(&str, &str)] = &[
    (
        r"(?i)\bi (?:really |much |would )?prefer\s+(.+)",
        "The user prefers {}",
    ),
    (
        r"(?i)\bi (?:don'?t|do not|never) (?:like|want)\s+(.+)",
        "The user dislikes {}",
    ),
    (
        r"(?i)\bi (?:hate|dislike|can'?t stand)\s+(.+)",
        "The user dislikes {}",
    ),
    (
        r"(?i)\bi (?:really )?(?:like|love|enjoy)\s+(.+)",
        "The user likes {}",
    ),
    (
        r"(?i)(?:^\s*|\bplease\s+)always\s+(.+)",
        "The user wants the assistant to always {}",
    ),
    (
        r"(?i)(?:^\s*|\bplease\s+)never\s+(.+)",
        "The user wants the assistant never to {}",
    ),
    (r"(?i)\bcall me\s+(.+)", "The user wants to be called {}"),
    (
        r"(?i)\b(?:answer|reply|respond|write) (?:to me )?in\s+(.+)",
        "The user wants answers in {}",
    ),
    (r"我(?:不喜欢|讨厌|不想要)(.+)", "用户不喜欢{}"),
    (r"我(?:更喜欢|偏好|倾向于)(.+)", "用户更喜欢{}"),
    (r"我(?:很|非常|比较)?喜欢(.+)", "用户喜欢{}"),
    (r"以后(?:都|请|要)(.+)", "用户希望以后{}"),
    (r"^\s*(?:请|麻烦)?(?:不要|别)(.+)", "用户不希望{}"),
    (r"(?:请)?用(.+?)(?:回答|回复)", "用户希望用{}回答"),
    (r"叫我(.+)", "用户希望被称为{}"),
];

/// Words that make an object about the moment rather than a lasting taste.
const DEICTIC: &[&str] = &["this", "that", "it", "these", "those", "这", "那", "它"];

static COMPILED: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    RULES
        .iter()
        .filter_map(|(pattern, template)| Some((Regex::new(pattern).ok()?, *template)))
        .collect()
});

/// The preferences stated in `text`, as sentences (each clause matched by
/// its first rule; at most one per clause).
pub fn rule_preferences(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for clause in statements(text) {
        for (re, template) in COMPILED.iter() {
            let Some(object) = re.captures(clause).and_then(|c| c.get(1)) else {
                continue;
            };
            let object = object
                .as_str()
                .trim()
                .trim_end_matches([',', '，', '、'])
                .trim();
            if object.chars().count() < 2 || object.chars().count() > MAX_OBJECT {
                break;
            }
            let lower = object.to_lowercase();
            if DEICTIC.iter().any(|d| {
                lower == *d
                    || lower.starts_with(&format!("{d} "))
                    || (!d.is_ascii() && lower.starts_with(d))
            }) {
                break;
            }
            let sentence = template.replace("{}", object);
            if !out.contains(&sentence) {
                out.push(sentence);
            }
            break;
        }
    }
    out
}

/// The clauses of `text` that are not questions.
fn statements(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if ".!?;。！？；\n".contains(c) {
            if !matches!(c, '?' | '？') {
                out.push(&text[start..i]);
            }
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stated_preferences_become_sentences() {
        assert_eq!(
            rule_preferences("Hi! I prefer short answers with bullet points. Thanks"),
            ["The user prefers short answers with bullet points"]
        );
        assert_eq!(
            rule_preferences("Please always reply in metric units; I don't like tables"),
            [
                "The user wants the assistant to always reply in metric units",
                "The user dislikes tables"
            ]
        );
        assert_eq!(
            rule_preferences("我不喜欢表格。以后都用中文回答"),
            ["用户不喜欢表格", "用户希望以后用中文回答"]
        );
        assert_eq!(rule_preferences("叫我小王"), ["用户希望被称为小王"]);
    }

    #[test]
    fn questions_and_the_moment_are_not_preferences() {
        assert!(rule_preferences("What is the weather in Paris?").is_empty());
        assert!(rule_preferences("I like this answer").is_empty());
        assert!(rule_preferences("我喜欢这个").is_empty());
        assert!(rule_preferences("ok").is_empty());
        assert!(rule_preferences("Do you think I prefer tea?").is_empty());
        assert!(rule_preferences("I always forget my keys").is_empty());
        assert!(rule_preferences("我和别人一起去").is_empty());
    }
}
