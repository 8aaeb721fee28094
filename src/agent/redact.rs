//! Redaction of secret-looking fields before anything is written to a trace.

use serde_json::Value;

const SECRET_KEYS: &[&str] = &[
    "api_key",
    "apikey",
    "token",
    "password",
    "passwd",
    "secret",
    "authorization",
    "cookie",
];

/// Whether a field looks like it holds a secret. Token *counts*
/// (`input_tokens: 812`) are usage figures, not credentials.
fn is_secret(key: &str, value: &Value) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    let count = k.ends_with("tokens") && value.is_number();
    !count && SECRET_KEYS.iter().any(|s| k.contains(s))
}

/// Replaces the values of secret-looking fields, at any depth, with `<redacted>`.
pub(crate) fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret(k, v) {
                        Value::String("<redacted>".into())
                    } else {
                        redact(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_secret_fields_are_redacted() {
        let v = json!({"url": "x", "headers": {"Authorization": "Bearer abc", "X-Api-Key": "k"},
                       "items": [{"password": "p", "name": "n"}], "access_token": "t", "cookies": "c"});
        let r = redact(&v);
        assert_eq!(r["url"], "x");
        assert_eq!(r["headers"]["Authorization"], "<redacted>");
        assert_eq!(r["headers"]["X-Api-Key"], "<redacted>");
        assert_eq!(r["items"][0]["password"], "<redacted>");
        assert_eq!(r["items"][0]["name"], "n");
        assert_eq!(r["access_token"], "<redacted>");
        assert_eq!(r["cookies"], "<redacted>");
    }

    #[test]
    fn token_counts_are_kept_and_token_strings_are_not() {
        let v = json!({"input_tokens": 812, "cache_read_tokens": 0, "tokens": "abc", "refresh_tokens": ["x"]});
        let r = redact(&v);
        assert_eq!(r["input_tokens"], 812);
        assert_eq!(r["cache_read_tokens"], 0);
        assert_eq!(r["tokens"], "<redacted>");
        assert_eq!(r["refresh_tokens"], "<redacted>");
    }
}
