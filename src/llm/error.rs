//! Provider errors, classified so a fallback can tell recoverable from fatal.

use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    #[error("the model endpoint is rate limiting{}", retry_hint(*retry_after))]
    RateLimited { retry_after: Option<Duration> },
    #[error("the model sent nothing for {0:?}")]
    Timeout(Duration),
    #[error("network error reaching the model endpoint: {0}")]
    Network(String),
    #[error("the model endpoint failed with HTTP {status}: {message}")]
    Server { status: u16, message: String },
    /// Bad key, unknown model, malformed request: retrying elsewhere won't help.
    #[error("the model endpoint refused the request (HTTP {status}): {message}")]
    Config { status: u16, message: String },
    #[error("the model endpoint sent a malformed response: {0}")]
    InvalidResponse(String),
}

/// ` (retry after 5s)`, or nothing when the endpoint did not say: no `Some(…)`
/// in a message an operator reads.
fn retry_hint(retry_after: Option<Duration>) -> String {
    retry_after.map_or_else(String::new, |d| format!(" (retry after {d:?})"))
}

impl ProviderError {
    /// Whether switching to a fallback provider could help (429, timeout, network, 5xx).
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Timeout(_)
                | ProviderError::Network(_)
                | ProviderError::Server { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_reads_without_debug_formatting() {
        let told = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(5)),
        };
        assert_eq!(
            told.to_string(),
            "the model endpoint is rate limiting (retry after 5s)"
        );
        let untold = ProviderError::RateLimited { retry_after: None };
        assert_eq!(untold.to_string(), "the model endpoint is rate limiting");
    }
}
