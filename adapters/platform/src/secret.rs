//! A redacting newtype for tokens and keys, and scrubbing them out of error text.

use std::fmt;

/// A secret value. `Debug` and `Display` print `<redacted>`; only
/// [`Secret::expose`] reveals it, at the point of use.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Replaces every occurrence of the secret in `text` with `<redacted>`
    /// (error messages of HTTP clients carry request URLs, and bot tokens live in
    /// Telegram's URLs).
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "<redacted>")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new("123456:ABC-DEF");
        assert_eq!(format!("{s} {s:?}"), "<redacted> Secret(<redacted>)");
        assert_eq!(
            s.scrub(
                "error sending request for url (https://api.telegram.org/bot123456:ABC-DEF/GetMe)"
            ),
            "error sending request for url (https://api.telegram.org/bot<redacted>/GetMe)"
        );
    }
}
