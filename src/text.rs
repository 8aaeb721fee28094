//! Small text helpers shared across the core.

/// `s` cut to at most `max` characters, with `…` when something was cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_by_characters_not_bytes() {
        assert_eq!(clip("héllo", 10), "héllo");
        assert_eq!(clip("咖啡咖啡", 2), "咖啡…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
