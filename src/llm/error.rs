//! Provider errors, classified so a fallback can tell recoverable from fatal.

use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    #[error("the model endpoint is rate limiting (retry after {retry_after:?})")]
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
