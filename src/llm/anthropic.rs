//! The Anthropic Messages API provider (`POST {base}/messages`, streamed), with
//! prompt caching on the system prompt and a sliding breakpoint on the last
//! message.

mod decode;
mod error;
mod wire;

use async_trait::async_trait;
use serde_json::Value;

use super::endpoint::EndpointConfig;
use super::error::ProviderError;
use super::http;
use super::metadata::ModelInfo;
use super::openai::error as openai_error;
use super::sse;
use super::types::ChatRequest;
use super::{ChunkStream, Provider};

/// `max_tokens` when `LLM_MAX_OUTPUT_TOKENS` is unset (the API requires one).
const DEFAULT_MAX_TOKENS: u32 = 8192;
/// The smallest extended-thinking budget the API accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;
/// The API version this provider speaks.
const API_VERSION: &str = "2023-06-01";

/// A [`Provider`] for Anthropic's Messages API.
#[derive(Debug)]
pub struct AnthropicProvider {
    config: EndpointConfig,
    endpoint: String,
    client: reqwest::Client,
}

impl AnthropicProvider {
    /// Builds the HTTP client; fails with [`ProviderError::Config`] (status 0) on
    /// an unusable base URL or key.
    pub fn new(config: EndpointConfig) -> Result<Self, ProviderError> {
        let endpoint = http::endpoint(&config.base_url, "/messages")?;
        let client = http::client(&config, "")?;
        Ok(Self {
            config,
            endpoint,
            client,
        })
    }

    /// `LLM_MAX_OUTPUT_TOKENS`, else the default — on top of the thinking
    /// budget, which counts against it.
    fn max_tokens(&self) -> u32 {
        let thinking = self.thinking_budget().unwrap_or(0);
        self.config
            .max_output_tokens
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_TOKENS.saturating_add(thinking))
    }

    /// The extended-thinking budget, when on and valid for the API.
    fn thinking_budget(&self) -> Option<u32> {
        self.config
            .thinking_budget
            .filter(|n| *n >= MIN_THINKING_BUDGET)
    }

    /// Sends one request and waits (at most the idle timeout) for the headers.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ProviderError> {
        let mut request = self
            .client
            .post(&self.endpoint)
            .header("anthropic-version", API_VERSION)
            .json(body);
        if let Some(key) = &self.config.api_key {
            request = request.header("x-api-key", http::secret_header("", key.expose())?);
        }
        http::send(request, self.config.idle_timeout).await
    }

    async fn start(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let body = wire::request_body(
            &self.config.model.name,
            self.max_tokens(),
            self.thinking_budget(),
            request,
        );
        tracing::debug!(
            endpoint = %crate::secrets::shown_url(&self.endpoint),
            model = %self.config.model.name,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "sending anthropic messages request"
        );
        let response = self.send(&body).await?;
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = openai_error::retry_after(response.headers());
            let text = http::body_text(response, self.config.idle_timeout).await;
            return Err(error::from_status(status, &text, retry_after));
        }
        if http::is_json(&response) {
            let idle = self.config.idle_timeout;
            return Err(http::json_body_error(response, idle, error::from_error_event).await);
        }
        Ok(sse::chunk_stream(
            response,
            self.config.idle_timeout,
            self.config.api_key.clone(),
            decode::Decoder::default(),
        ))
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn model(&self) -> &ModelInfo {
        &self.config.model
    }

    fn system(&self) -> &'static str {
        "anthropic"
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChunkStream, ProviderError> {
        self.start(&request)
            .await
            .map_err(|e| http::failed(e, self.config.api_key.as_ref(), &self.endpoint))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::Secret;

    fn config(base: &str) -> EndpointConfig {
        EndpointConfig::new(base, ModelInfo::new("claude-test", None))
    }

    #[test]
    fn endpoint_strips_the_trailing_slash() -> Result<(), ProviderError> {
        let provider = AnthropicProvider::new(config("https://api.anthropic.com/v1/"))?;
        assert_eq!(provider.endpoint, "https://api.anthropic.com/v1/messages");
        Ok(())
    }

    #[test]
    fn bad_urls_and_keys_are_config_errors() {
        for base in ["not a url", "ftp://x/v1"] {
            assert!(matches!(
                AnthropicProvider::new(config(base)),
                Err(ProviderError::Config { status: 0, .. })
            ));
        }
        let bad_key = config("http://x/v1").with_api_key(Secret::new("sk-ant\nnewline"));
        assert!(matches!(
            AnthropicProvider::new(bad_key),
            Err(ProviderError::Config { status: 0, message }) if !message.contains("sk-ant")
        ));
    }

    #[test]
    fn max_tokens_defaults_and_debug_redacts_the_key() -> Result<(), ProviderError> {
        let cfg = config("http://localhost/v1").with_api_key(Secret::new("sk-ant-abcdef123"));
        let provider = AnthropicProvider::new(cfg.clone())?;
        assert_eq!(provider.max_tokens(), DEFAULT_MAX_TOKENS);
        assert!(!format!("{provider:?}").contains("sk-ant-abcdef123"));
        let limited = AnthropicProvider::new(EndpointConfig {
            max_output_tokens: Some(1000),
            ..cfg
        })?;
        assert_eq!(limited.max_tokens(), 1000);
        Ok(())
    }
}
