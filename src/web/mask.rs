//! Secrets never rendered: known secret values scrubbed, secret-named
//! fields of tool arguments masked, and credentials inside strings
//! (`Authorization: Bearer …`, `api_key=…`) cut out.

use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// What stands in for a hidden value.
pub const MASK: &str = "••••••";

static CREDENTIAL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(authorization|proxy-authorization|x-api-key|api[_-]?key|access[_-]?token|token|password|secret)(\s*[:=]\s*)(bearer\s+|basic\s+|token\s+)?[^\s,;&'\x22]+",
    )
    .ok()
});

static BEARER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}").ok());

/// `text` with known secrets scrubbed and credentials masked.
pub fn mask_text(text: &str) -> String {
    let text = crate::secrets::scrub(text);
    let text = match CREDENTIAL.as_ref() {
        Some(re) => re.replace_all(&text, |c: &regex::Captures<'_>| {
            format!(
                "{}{}{}{MASK}",
                &c[1],
                &c[2],
                c.get(3).map_or("", |m| m.as_str())
            )
        }),
        None => text.clone(),
    };
    match BEARER.as_ref() {
        Some(re) => re
            .replace_all(&text, |c: &regex::Captures<'_>| format!("{} {MASK}", &c[1]))
            .into_owned(),
        None => text.into_owned(),
    }
}

/// Tool arguments (JSON text) pretty-printed with secrets masked; text that
/// is not JSON is masked as text.
pub fn mask_json(arguments: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(arguments) else {
        return mask_text(arguments);
    };
    let masked = mask_value(&value);
    serde_json::to_string_pretty(&masked).unwrap_or_else(|_| mask_text(arguments))
}

fn mask_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if secret_name(k) && !v.is_number() {
                        Value::String(MASK.into())
                    } else {
                        mask_value(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(mask_value).collect()),
        Value::String(s) => Value::String(mask_text(s)),
        other => other.clone(),
    }
}

fn secret_name(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('-', "_");
    [
        "api_key",
        "apikey",
        "token",
        "password",
        "passwd",
        "secret",
        "authorization",
        "cookie",
        "credential",
    ]
    .iter()
    .any(|s| k.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_fields_and_headers_are_masked() {
        let args = r#"{"url":"https://api.example.com","headers":{"Authorization":"Bearer sk-live-123456789"},"api_key":"abc","command":"curl -H 'Authorization: Bearer tok_1234567890' x","max_tokens":5}"#;
        let shown = mask_json(args);
        assert!(!shown.contains("sk-live"), "{shown}");
        assert!(!shown.contains("tok_1234567890"), "{shown}");
        assert!(!shown.contains("\"abc\""), "{shown}");
        assert!(shown.contains("https://api.example.com"), "{shown}");
        assert!(shown.contains("\"max_tokens\": 5"), "{shown}");
    }

    #[test]
    fn credentials_in_text_are_masked() {
        let shown = mask_text(
            "GET / HTTP/1.1\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\napi_key=hunter22 ok",
        );
        assert!(!shown.contains("dXNlcjpw"), "{shown}");
        assert!(!shown.contains("hunter22"), "{shown}");
        assert!(shown.contains("ok"), "{shown}");
    }
}
