//! A top-level JSON scanner: splits an array into its elements and an object
//! into its members without parsing them, so one element no parser accepts
//! (a lone surrogate escape, nesting past serde_json's 128 levels) cannot
//! fail its neighbours.
//!
//! It tracks only strings, escapes and brackets, iteratively (no depth
//! limit), and validates nothing inside an element: that is the parser's job,
//! element by element.

/// Why a text could not be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScanError {
    #[error("expected a JSON {0}")]
    Expected(&'static str),
    #[error("the JSON text ends inside a value")]
    Unterminated,
    #[error("unexpected text after the JSON value")]
    Trailing,
    #[error("an empty element or member")]
    Empty,
    #[error("a member without a string key")]
    Key,
}

/// The elements of a JSON array, as trimmed slices of `text`.
pub(crate) fn elements(text: &str) -> Result<Vec<&str>, ScanError> {
    split(text, b'[', "array")
}

/// The members of a JSON object as (raw key, raw value): the key is the text
/// between its quotes, escapes left as they are.
pub(crate) fn members(text: &str) -> Result<Vec<(&str, &str)>, ScanError> {
    split(text, b'{', "object")?
        .into_iter()
        .map(|member| {
            let rest = member.strip_prefix('"').ok_or(ScanError::Key)?;
            let end = string_end(rest.as_bytes()).ok_or(ScanError::Key)?;
            let value = rest[end + 1..].trim_start();
            let value = value.strip_prefix(':').ok_or(ScanError::Key)?.trim_start();
            if value.is_empty() {
                return Err(ScanError::Empty);
            }
            Ok((&rest[..end], value))
        })
        .collect()
}

/// The raw value of the first member named `key` (unescaped keys only).
pub(crate) fn member<'a>(object: &'a str, key: &str) -> Option<&'a str> {
    members(object)
        .ok()?
        .into_iter()
        .find_map(|(k, v)| (k == key).then_some(v))
}

/// The index of the closing quote of a string whose opening quote came just
/// before `bytes`.
fn string_end(bytes: &[u8]) -> Option<usize> {
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return Some(i),
            _ => {}
        }
    }
    None
}

/// Splits the container opened by `open` at its top-level commas. Brackets
/// and quotes are ASCII, so every cut falls on a character boundary.
fn split<'a>(text: &'a str, open: u8, what: &'static str) -> Result<Vec<&'a str>, ScanError> {
    let text = text.trim();
    let bytes = text.as_bytes();
    if bytes.first() != Some(&open) {
        return Err(ScanError::Expected(what));
    }
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, 1, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(&bytes[i + 1..]).ok_or(ScanError::Unterminated)?;
                i += end + 1;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth = depth.checked_sub(1).ok_or(ScanError::Unterminated)?;
                if depth == 0 {
                    if i + 1 != bytes.len() {
                        return Err(ScanError::Trailing);
                    }
                    let last = text[start..i].trim();
                    if !last.is_empty() {
                        parts.push(last);
                    } else if !parts.is_empty() {
                        return Err(ScanError::Empty);
                    }
                    return Ok(parts);
                }
            }
            b',' if depth == 1 => {
                let part = text[start..i].trim();
                if part.is_empty() {
                    return Err(ScanError::Empty);
                }
                parts.push(part);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    Err(ScanError::Unterminated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_arrays_at_top_level_commas_only() {
        assert_eq!(elements(" [ ] "), Ok(vec![]));
        assert_eq!(
            elements(r#"[1, {"a": [2, 3]}, "x,]\"}", [[]]]"#),
            Ok(vec!["1", r#"{"a": [2, 3]}"#, r#""x,]\"}""#, "[[]]"])
        );
    }

    #[test]
    fn elements_no_parser_accepts_stay_whole() {
        let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
        let text = format!(r#"[{{"t":"a\ud800b"}}, {deep}, 7]"#);
        let parts = elements(&text).unwrap();
        assert_eq!(parts, [r#"{"t":"a\ud800b"}"#, deep.as_str(), "7"]);
        assert!(serde_json::from_str::<serde_json::Value>(parts[0]).is_err());
        assert!(serde_json::from_str::<serde_json::Value>(parts[1]).is_err());
    }

    #[test]
    fn finds_members_and_their_raw_values() {
        let obj = r#"{"ok" : true, "result": [{"update_id": 5}], "k\"q": 1}"#;
        assert_eq!(member(obj, "ok"), Some("true"));
        assert_eq!(member(obj, "result"), Some(r#"[{"update_id": 5}]"#));
        assert_eq!(member(obj, "update_id"), None, "top level only");
        assert_eq!(member(obj, r#"k\"q"#), Some("1"));
        assert_eq!(
            member(r#"{"update_id":12,"message":"\ud800"}"#, "update_id"),
            Some("12")
        );
    }

    #[test]
    fn broken_text_is_refused_not_panicking() {
        assert_eq!(elements(r#"{"a":1}"#), Err(ScanError::Expected("array")));
        assert_eq!(elements("[1, 2"), Err(ScanError::Unterminated));
        assert_eq!(elements(r#"["abc]"#), Err(ScanError::Unterminated));
        assert_eq!(elements("[1]]"), Err(ScanError::Trailing));
        assert_eq!(elements("[1,,2]"), Err(ScanError::Empty));
        assert_eq!(elements("[1,]"), Err(ScanError::Empty));
        assert_eq!(elements("]"), Err(ScanError::Expected("array")));
        assert_eq!(elements(""), Err(ScanError::Expected("array")));
        assert_eq!(members(r#"{1: 2}"#), Err(ScanError::Key));
        assert_eq!(members(r#"{"a" 2}"#), Err(ScanError::Key));
        assert_eq!(members(r#"{"a":}"#), Err(ScanError::Empty));
        assert_eq!(members(r#"{"a\"}"#), Err(ScanError::Unterminated));
    }
}
