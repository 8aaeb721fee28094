//! Classifying Anthropic failures: HTTP statuses with `{"type":"error","error":
//! {"type","message"}}` bodies, and `error` events inside a stream.

use std::time::Duration;

use serde_json::Value;

use crate::llm::error::ProviderError;
use crate::llm::openai::error as openai_error;

/// Classifies a non-success HTTP response: 429 is rate limiting, 5xx (529
/// `overloaded_error` included) a server failure, anything else a refusal.
pub(super) fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> ProviderError {
    match openai_error::from_status(status, body, retry_after) {
        ProviderError::Server { status, message } => ProviderError::Server {
            status,
            message: with_kind(body, message),
        },
        ProviderError::Config { status, message } => ProviderError::Config {
            status,
            message: with_kind(body, message),
        },
        other => other,
    }
}

/// Classifies the `error` object of an in-stream `error` event (the HTTP status
/// was already 200, so the type decides).
pub(super) fn from_error_event(error: &Value) -> ProviderError {
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // `body_message` reads (and shortens) `error.message` of a whole body.
    let message = openai_error::body_message(&serde_json::json!({ "error": error }).to_string());
    let message = if kind.is_empty() {
        message
    } else {
        format!("{kind}: {message}")
    };
    let status = match kind {
        "rate_limit_error" => return ProviderError::RateLimited { retry_after: None },
        "overloaded_error" => 529,
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "timeout_error" => 504,
        // `api_error` and anything new: the server failed mid-response.
        _ => 500,
    };
    if status >= 500 {
        ProviderError::Server { status, message }
    } else {
        ProviderError::Config { status, message }
    }
}

/// Prefixes the message with the error `type` (`overloaded_error: Overloaded`).
fn with_kind(body: &str, message: String) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    match parsed.as_ref().and_then(|v| v["error"]["type"].as_str()) {
        Some(kind) if !kind.is_empty() => format!("{kind}: {message}"),
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(kind: &str, message: &str) -> String {
        json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
    }

    #[test]
    fn statuses_are_classified() {
        let rate = from_status(
            429,
            &body("rate_limit_error", "slow"),
            Some(Duration::from_secs(3)),
        );
        assert!(
            matches!(rate, ProviderError::RateLimited { retry_after: Some(d) } if d.as_secs() == 3)
        );
        let busy = from_status(529, &body("overloaded_error", "Overloaded"), None);
        assert!(
            matches!(&busy, ProviderError::Server { status: 529, message } if message == "overloaded_error: Overloaded")
        );
        assert!(busy.is_recoverable());
        for status in [400, 401, 403, 404] {
            let refused = from_status(status, &body("invalid_request_error", "no"), None);
            assert!(matches!(refused, ProviderError::Config { status: s, .. } if s == status));
        }
        assert!(matches!(
            from_status(502, "<html>bad gateway</html>", None),
            ProviderError::Server { status: 502, message } if message.contains("bad gateway")
        ));
    }

    #[test]
    fn stream_errors_are_classified_by_type() {
        let event = |kind: &str| from_error_event(&json!({"type": kind, "message": "m"}));
        assert!(matches!(
            event("overloaded_error"),
            ProviderError::Server { status: 529, .. }
        ));
        assert!(matches!(
            event("api_error"),
            ProviderError::Server { status: 500, .. }
        ));
        assert!(matches!(
            event("rate_limit_error"),
            ProviderError::RateLimited { .. }
        ));
        assert!(matches!(
            event("invalid_request_error"),
            ProviderError::Config { status: 400, message } if message == "invalid_request_error: m"
        ));
        assert!(event("something_new").is_recoverable());
    }
}
