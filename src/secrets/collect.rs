//! Which values are secrets: those of any `*_TOKEN`, `*_KEY`, `*_SECRET` or
//! `*PASSWORD*` variable, and the passwords in URLs. (The configuration's own
//! are listed by `Config::secret_values`.)

/// Whether a variable's name says it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    ["_TOKEN", "_KEY", "_SECRET", "_PASSWORD", "_PASS"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
        || name.contains("PASSWORD")
        || name.contains("SECRET")
}

/// The secret values among `(name, value)` variables: whole values of
/// secret-named ones, and the passwords of URLs in any.
pub fn from_vars<I>(vars: I) -> Vec<String>
where
    I: IntoIterator<Item = (String, String)>,
{
    let mut out = Vec::new();
    for (name, value) in vars {
        let value = value.trim();
        if is_secret_name(&name) {
            out.extend(token_parts(value));
        }
        out.extend(url_secrets(value));
    }
    out
}

/// A token and, for `id:secret` bot tokens (Telegram), its secret part alone.
pub fn token_parts(token: &str) -> Vec<String> {
    let mut out = vec![token.to_owned()];
    if let Some((_, secret)) = token.split_once(':') {
        out.push(secret.to_owned());
    }
    out
}

/// For a URL with a password: the whole URL, `:password@` (distinctive even
/// when the password is short) and the password itself; and the values of
/// its credential query parameters (`?key=`).
pub fn url_secrets(raw: &str) -> Vec<String> {
    let Ok(url) = url::Url::parse(raw.trim()) else {
        return Vec::new();
    };
    let query = super::url_redact::query_secrets(&url);
    let Some(password) = url.password().filter(|p| !p.is_empty()) else {
        return query;
    };
    let mut out = vec![raw.trim().to_owned(), url.to_string()];
    out.extend(query);
    out.push(format!(":{password}@"));
    out.push(password.to_owned());
    // The decoded form too, as a program printing it would show it.
    if let Ok(decoded) = urlencoding_decode(password) {
        out.push(decoded);
    }
    out
}

/// Percent-decodes a URL component.
fn urlencoding_decode(raw: &str) -> Result<String, std::string::FromUtf8Error> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::shown_url;

    #[test]
    fn names_that_say_secret_are_secret_and_counts_are_not() {
        for name in [
            "TELEGRAM_BOT_TOKEN",
            "LLM_API_KEY",
            "TELEGRAM_WEBHOOK_SECRET",
            "PGPASSWORD",
            "SMTP_PASS",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["LLM_MAX_OUTPUT_TOKENS", "KEYBOARD", "LLM_MODEL", "PATH"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn a_url_password_is_found_in_every_form() {
        let found = url_secrets("https://user:p%40ss-w0rd@llm.internal/v1");
        assert!(found.contains(&"p%40ss-w0rd".to_owned()), "{found:?}");
        assert!(found.contains(&"p@ss-w0rd".to_owned()), "{found:?}");
        assert!(found.contains(&":p%40ss-w0rd@".to_owned()), "{found:?}");
        assert!(url_secrets("sqlite://./data/x.db").is_empty());
        assert_eq!(
            shown_url("https://user:pw@llm.internal/v1"),
            "https://user:redacted@llm.internal/v1"
        );
    }

    #[test]
    fn bot_tokens_count_with_and_without_their_id() {
        let found = from_vars([("TELEGRAM_BOT_TOKEN".into(), "123456:ABCDEF-ghijkl".into())]);
        assert_eq!(found, ["123456:ABCDEF-ghijkl", "ABCDEF-ghijkl"]);
    }
}
