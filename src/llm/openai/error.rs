//! Classifying OpenAI-compatible failures (HTTP statuses, in-stream error objects,
//! transport errors) into [`ProviderError`]s, and scrubbing the key out of them.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;
use switchboard_platform::Secret;

use crate::llm::error::ProviderError;

/// Longest error message kept from a response body.
const MAX_MESSAGE_CHARS: usize = 500;

/// Classifies a non-success HTTP response.
pub(crate) fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> ProviderError {
    let message = body_message(body);
    match status {
        429 => ProviderError::RateLimited { retry_after },
        500..=599 => ProviderError::Server { status, message },
        _ => ProviderError::Config { status, message },
    }
}

/// A 404 from `endpoint`: which URL was asked and, when the base URL has no
/// version segment, the `/v1` it probably lacks (Ollama's own 404 body says
/// only "404 page not found").
pub(crate) fn not_found(endpoint: &str, base_url: &str, body: &str) -> ProviderError {
    let shown = crate::secrets::shown_url(endpoint);
    let base = crate::secrets::shown_url(base_url.trim().trim_end_matches('/'));
    let versioned = base.rsplit('/').next().is_some_and(|last| {
        last.len() > 1 && last.starts_with('v') && last[1..].chars().all(|c| c.is_ascii_digit())
    });
    let hint = if versioned {
        "check the base URL and that the endpoint serves this model".to_owned()
    } else {
        format!("OpenAI-compatible servers (Ollama, vLLM, llama.cpp) answer under /v1: set the base URL (LLM_BASE_URL, or the fallback's) to {base}/v1")
    };
    ProviderError::Config {
        status: 404,
        message: format!(
            "POST {shown} was not found ({}); {hint}",
            body_message(body)
        ),
    }
}

/// Classifies an `{"error": …}` object found in a stream or a 200 JSON body.
pub(crate) fn from_error_object(error: &Value) -> ProviderError {
    let message = match error {
        Value::String(text) => truncate(text),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| truncate(&other.to_string()), truncate),
    };
    let code = error.get("code");
    let numeric = code
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c));
    if let Some(status) = numeric {
        return from_status_message(status, message);
    }
    let kind = [error.get("type"), code]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    if kind.contains("rate_limit") || kind.contains("quota") {
        ProviderError::RateLimited { retry_after: None }
    } else if kind.contains("invalid_request")
        || kind.contains("authentication")
        || kind.contains("permission")
        || kind.contains("not_found")
        || kind.contains("invalid_api_key")
    {
        ProviderError::Config {
            status: 400,
            message,
        }
    } else {
        // An error after a 200 is the server failing mid-response.
        ProviderError::Server {
            status: 500,
            message,
        }
    }
}

fn from_status_message(status: u16, message: String) -> ProviderError {
    match status {
        429 => ProviderError::RateLimited { retry_after: None },
        500..=599 => ProviderError::Server { status, message },
        _ => ProviderError::Config { status, message },
    }
}

/// Classifies a transport error (connecting, sending or reading the body) as
/// [`ProviderError::Network`], with the whole cause chain in the text.
pub(crate) fn from_reqwest(error: &reqwest::Error) -> ProviderError {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    // The request URL in the text keeps a base URL's password otherwise.
    // So does a `?key=` in it.
    if let Some(url) = error.url() {
        let shown = crate::secrets::shown_url(url.as_str());
        if shown != url.as_str() {
            text = text.replace(url.as_str(), &shown);
        }
    }
    // We parse bodies ourselves, so even reqwest's "decode" errors are the body
    // stream failing (e.g. the connection cut mid-chunk): a network problem.
    ProviderError::Network(text)
}

/// The human part of an error body: `error.message` when it is JSON, else the text.
pub(crate) fn body_message(body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
    });
    match message {
        Some(message) => truncate(message),
        None if body.trim().is_empty() => "(empty body)".to_owned(),
        None => truncate(body.trim()),
    }
}

/// `Retry-After` (seconds or an HTTP date) or `retry-after-ms`.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// Removes the API key from every text field of `error`.
pub(crate) fn scrub(error: ProviderError, key: Option<&Secret>) -> ProviderError {
    let Some(key) = key else {
        return error;
    };
    match error {
        ProviderError::Network(text) => ProviderError::Network(key.scrub(&text)),
        ProviderError::InvalidResponse(text) => ProviderError::InvalidResponse(key.scrub(&text)),
        ProviderError::Server { status, message } => ProviderError::Server {
            status,
            message: key.scrub(&message),
        },
        ProviderError::Config { status, message } => ProviderError::Config {
            status,
            message: key.scrub(&message),
        },
        other @ (ProviderError::RateLimited { .. } | ProviderError::Timeout(_)) => other,
    }
}

pub(crate) fn truncate(text: &str) -> String {
    crate::text::clip(text, MAX_MESSAGE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    #[test]
    fn statuses_are_classified() {
        let body = r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#;
        assert!(matches!(
            from_status(401, body, None),
            ProviderError::Config { status: 401, message } if message == "bad key"
        ));
        assert!(matches!(
            from_status(503, "upstream down", None),
            ProviderError::Server { status: 503, message } if message == "upstream down"
        ));
        assert!(matches!(
            from_status(429, "", Some(Duration::from_secs(2))),
            ProviderError::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(2)
        ));
    }

    #[test]
    fn error_objects_are_classified() {
        let rate = json!({"message": "slow down", "type": "rate_limit_exceeded"});
        assert!(matches!(
            from_error_object(&rate),
            ProviderError::RateLimited { .. }
        ));
        let coded = json!({"message": "overloaded", "code": 503});
        assert!(matches!(
            from_error_object(&coded),
            ProviderError::Server { status: 503, .. }
        ));
        let unknown = json!({"message": "boom"});
        assert!(matches!(
            from_error_object(&unknown),
            ProviderError::Server { message, .. } if message == "boom"
        ));
        let bad = json!({"message": "no such model", "type": "invalid_request_error"});
        assert!(!from_error_object(&bad).is_recoverable());
    }

    #[test]
    fn a_404_names_the_url_and_suggests_the_v1_suffix_only_when_missing() {
        let bare = not_found(
            "http://localhost:11434/chat/completions",
            "http://localhost:11434/",
            "404 page not found",
        )
        .to_string();
        assert!(bare.contains("HTTP 404"), "{bare}");
        assert!(
            bare.contains("POST http://localhost:11434/chat/completions"),
            "{bare}"
        );
        assert!(bare.contains("404 page not found"), "{bare}");
        assert!(bare.contains("to http://localhost:11434/v1"), "{bare}");
        let versioned = not_found(
            "http://localhost:11434/v1/chat/completions",
            "http://localhost:11434/v1",
            r#"{"error":{"message":"model \"llama9\" not found"}}"#,
        )
        .to_string();
        assert!(!versioned.contains("/v1/v1"), "{versioned}");
        assert!(
            versioned.contains("model \"llama9\" not found"),
            "{versioned}"
        );
        let keyed = not_found(
            "http://h/chat/completions?key=sk-q-123",
            "http://h?key=sk-q-123",
            "",
        )
        .to_string();
        assert!(!keyed.contains("sk-q-123"), "{keyed}");
        assert!(!not_found("http://h/x", "http://h", "").is_recoverable());
    }

    #[test]
    fn retry_after_forms() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("1.5"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
    }

    #[test]
    fn scrub_removes_the_key_and_long_bodies_are_cut() {
        let key = Secret::new("sk-very-secret");
        let err = from_status(401, "Incorrect API key provided: sk-very-secret", None);
        let shown = scrub(err, Some(&key)).to_string();
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
        assert_eq!(body_message(&"x".repeat(2000)).chars().count(), 501);
    }
}
