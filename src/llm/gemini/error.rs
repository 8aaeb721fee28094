//! Classifying Gemini failures (`{"error": {code, message, status, details}}`
//! bodies, in-stream errors, blocked prompts) into [`ProviderError`]s.

use std::time::Duration;

use serde_json::Value;

use crate::llm::error::ProviderError;
use crate::llm::openai::error as openai_error;

/// Classifies a non-success HTTP response; `retry_after` is the header's value
/// (a `RetryInfo` detail in the body is used when the header is absent).
pub(crate) fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> ProviderError {
    let parsed = serde_json::from_str::<Value>(body).ok();
    match parsed.as_ref().and_then(error_object) {
        Some(error) => classify(status, error, retry_after),
        None => openai_error::from_status(status, body, retry_after),
    }
}

/// Classifies an error object found in a stream or a 200 JSON body.
pub(crate) fn from_error_object(error: &Value) -> ProviderError {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or_else(|| status_of(error.get("status").and_then(Value::as_str)));
    classify(status, error, None)
}

/// The `error` object of a body (`{"error": …}` or `[{"error": …}]`).
fn error_object(body: &Value) -> Option<&Value> {
    let body = match body {
        Value::Array(items) => items.first()?,
        other => other,
    };
    body.get("error").filter(|e| e.is_object())
}

fn classify(status: u16, error: &Value, retry_after: Option<Duration>) -> ProviderError {
    let message = error.get("message").and_then(Value::as_str).map_or_else(
        || openai_error::truncate(&error.to_string()),
        openai_error::truncate,
    );
    let kind = error.get("status").and_then(Value::as_str).unwrap_or("");
    match status {
        429 => ProviderError::RateLimited {
            retry_after: retry_after.or_else(|| retry_delay(error)),
        },
        500..=599 => ProviderError::Server { status, message },
        _ if kind == "RESOURCE_EXHAUSTED" => ProviderError::RateLimited {
            retry_after: retry_after.or_else(|| retry_delay(error)),
        },
        _ => ProviderError::Config { status, message },
    }
}

/// The HTTP status matching a `google.rpc.Code` name (for in-stream errors).
fn status_of(kind: Option<&str>) -> u16 {
    match kind.unwrap_or("") {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => 400,
        "UNAUTHENTICATED" => 401,
        "PERMISSION_DENIED" => 403,
        "NOT_FOUND" => 404,
        "RESOURCE_EXHAUSTED" => 429,
        "UNAVAILABLE" => 503,
        "DEADLINE_EXCEEDED" => 504,
        // INTERNAL, UNKNOWN and anything new: treat as the server's fault.
        _ => 500,
    }
}

/// `retryDelay` of a `google.rpc.RetryInfo` detail, e.g. `"7s"` or `"0.5s"`.
fn retry_delay(error: &Value) -> Option<Duration> {
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .and_then(|delay| delay.trim().strip_suffix('s')?.parse::<f64>().ok())
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(code: u16, status: &str, details: Value) -> String {
        json!({"error": {"code": code, "message": "m", "status": status, "details": details}})
            .to_string()
    }

    #[test]
    fn statuses_are_classified() {
        let retry =
            json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]);
        assert!(matches!(
            from_status(429, &body(429, "RESOURCE_EXHAUSTED", retry.clone()), None),
            ProviderError::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(7)
        ));
        assert!(matches!(
            from_status(429, &body(429, "RESOURCE_EXHAUSTED", retry), Some(Duration::from_secs(2))),
            ProviderError::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(2)
        ));
        assert!(matches!(
            from_status(503, &body(503, "UNAVAILABLE", json!([])), None),
            ProviderError::Server { status: 503, .. }
        ));
        for (code, status) in [
            (400, "INVALID_ARGUMENT"),
            (403, "PERMISSION_DENIED"),
            (404, "NOT_FOUND"),
        ] {
            assert!(matches!(
                from_status(code, &body(code, status, json!([])), None),
                ProviderError::Config { message, .. } if message == "m"
            ));
        }
        assert!(matches!(
            from_status(502, "<html>bad gateway</html>", None),
            ProviderError::Server { status: 502, .. }
        ));
    }

    #[test]
    fn in_stream_errors_use_the_status_name() {
        let error = json!({"message": "overloaded", "status": "UNAVAILABLE"});
        assert!(matches!(
            from_error_object(&error),
            ProviderError::Server { status: 503, .. }
        ));
        let error = json!({"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"});
        assert!(!from_error_object(&error).is_recoverable());
    }
}
