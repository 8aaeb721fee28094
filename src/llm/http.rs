//! What the HTTP providers share: endpoint URLs, the client, the key header,
//! sending with the idle timeout, and reading a failed response's body.

use std::time::Duration;

use reqwest::header::{HeaderValue, CONTENT_TYPE};
use switchboard_platform::Secret;

use super::endpoint::EndpointConfig;
use super::error::ProviderError;
use super::openai::error as openai_error;

/// Longest error body read from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A problem found before any request was sent.
pub(crate) fn local_error(message: String) -> ProviderError {
    ProviderError::Config { status: 0, message }
}

/// `{base}{path}` (the base without its trailing slash), checked to be http(s).
pub(crate) fn endpoint(base_url: &str, path: &str) -> Result<String, ProviderError> {
    let base = base_url.trim().trim_end_matches('/');
    let endpoint = format!("{base}{path}");
    let url = url::Url::parse(&endpoint)
        .map_err(|e| local_error(format!("invalid model base URL {base:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(local_error(format!(
            "model base URL must be http(s): {base:?}"
        )));
    }
    Ok(endpoint)
}

/// The HTTP client of one endpoint; the key is checked to fit in a header.
pub(crate) fn client(
    config: &EndpointConfig,
    key_prefix: &str,
) -> Result<reqwest::Client, ProviderError> {
    if let Some(key) = &config.api_key {
        secret_header(key_prefix, key.expose())?;
    }
    reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .build()
        .map_err(|e| local_error(format!("cannot build the HTTP client: {e}")))
}

/// `{prefix}{secret}` as a header value marked sensitive (never in debug output).
pub(crate) fn secret_header(prefix: &str, secret: &str) -> Result<HeaderValue, ProviderError> {
    let mut value = HeaderValue::from_str(&format!("{prefix}{secret}"))
        .map_err(|_| local_error("the API key contains invalid characters".to_owned()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// Sends a request and waits (at most `idle`) for the response headers.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    idle: Duration,
) -> Result<reqwest::Response, ProviderError> {
    match tokio::time::timeout(idle, request.send()).await {
        Err(_) => Err(ProviderError::Timeout(idle)),
        Ok(Err(error)) => Err(openai_error::from_reqwest(&error)),
        Ok(Ok(response)) => Ok(response),
    }
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of a response, each read bounded by `idle`.
pub(crate) async fn body_text(mut response: reqwest::Response, idle: Duration) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match tokio::time::timeout(idle, response.chunk()).await {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).into_owned()
}

/// A failed call's error with the key scrubbed out, logged for the operator.
pub(crate) fn failed(error: ProviderError, key: Option<&Secret>, endpoint: &str) -> ProviderError {
    let error = openai_error::scrub(error, key);
    tracing::debug!(endpoint = %crate::secrets::shown_url(endpoint), %error, "model request failed");
    error
}

/// The error a 2xx JSON body carries (some servers answer failures with 200),
/// classified by the protocol's `classify`.
pub(crate) async fn json_body_error(
    response: reqwest::Response,
    idle: Duration,
    classify: impl Fn(&serde_json::Value) -> ProviderError,
) -> ProviderError {
    let text = body_text(response, idle).await;
    let value = serde_json::from_str::<serde_json::Value>(&text).ok();
    match value.as_ref().and_then(|v| v.get("error")) {
        Some(error) => classify(error),
        None => {
            ProviderError::InvalidResponse("expected an event stream, got a JSON body".to_owned())
        }
    }
}

/// Whether a successful response is a JSON body (an error some servers send
/// with 200) instead of an event stream.
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_join_and_refuse_non_http() {
        assert_eq!(
            endpoint("http://localhost:8080/v1/", "/chat/completions").ok(),
            Some("http://localhost:8080/v1/chat/completions".to_owned())
        );
        for base in ["not a url", "ftp://x/v1"] {
            assert!(matches!(
                endpoint(base, "/messages"),
                Err(ProviderError::Config { status: 0, .. })
            ));
        }
    }

    #[test]
    fn secret_headers_are_sensitive_and_errors_hide_the_key() {
        let value =
            secret_header("Bearer ", "sk-1").unwrap_or_else(|_| HeaderValue::from_static("x"));
        assert!(value.is_sensitive());
        match secret_header("", "sk-bad\nkey") {
            Err(e) => assert!(!e.to_string().contains("sk-bad")),
            Ok(_) => panic!("a newline cannot be in a header"),
        }
    }
}
