//! The OpenAI-compatible provider (OpenAI, DeepSeek, Qwen, Kimi, Ollama, vLLM,
//! llama.cpp) over reqwest and SSE.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;
use switchboard_platform::Secret;

use super::error::ProviderError;
use super::metadata::ModelInfo;
use super::openai_error;
use super::openai_stream::chunk_stream;
use super::openai_wire::{request_body, RequestOptions};
use super::types::ChatRequest;
use super::{ChunkStream, Provider};

/// Longest error body read from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Settings of one OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL including the version segment, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set (local servers often need none).
    pub api_key: Option<Secret>,
    pub model: ModelInfo,
    /// A stream silent for this long fails with [`ProviderError::Timeout`]; also
    /// bounds the wait for the response headers.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// Sent when set (some endpoints reject it; then it is dropped).
    pub frequency_penalty: Option<f32>,
}

impl OpenAiConfig {
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

    /// A config with no key, the default timeouts and no optional parameters.
    pub fn new(base_url: impl Into<String>, model: ModelInfo) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            frequency_penalty: None,
        }
    }

    pub fn with_api_key(mut self, key: Secret) -> Self {
        self.api_key = Some(key).filter(|k| !k.is_empty());
        self
    }

    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }
}

/// An optional request parameter an endpoint may reject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionalParam {
    StreamOptions,
    ToolChoice,
    FrequencyPenalty,
}

impl OptionalParam {
    const ALL: [OptionalParam; 3] = [
        OptionalParam::StreamOptions,
        OptionalParam::ToolChoice,
        OptionalParam::FrequencyPenalty,
    ];

    fn name(self) -> &'static str {
        match self {
            OptionalParam::StreamOptions => "stream_options",
            OptionalParam::ToolChoice => "tool_choice",
            OptionalParam::FrequencyPenalty => "frequency_penalty",
        }
    }
}

/// Parameters this endpoint has rejected; remembered for the provider's lifetime.
#[derive(Debug, Default)]
struct Rejected([AtomicBool; 3]);

impl Rejected {
    fn flag(&self, param: OptionalParam) -> &AtomicBool {
        &self.0[param as usize]
    }

    fn contains(&self, param: OptionalParam) -> bool {
        self.flag(param).load(Ordering::Relaxed)
    }

    fn insert(&self, param: OptionalParam) {
        self.flag(param).store(true, Ordering::Relaxed);
    }
}

/// A [`Provider`] for any OpenAI-compatible `/chat/completions` endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: String,
    client: reqwest::Client,
    rejected: Rejected,
}

impl OpenAiProvider {
    /// Builds the HTTP client; fails with [`ProviderError::Config`] (status 0) on
    /// an unusable base URL or key.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let local = |message: String| ProviderError::Config { status: 0, message };
        let base = config.base_url.trim().trim_end_matches('/');
        let endpoint = format!("{base}/chat/completions");
        let url = url::Url::parse(&endpoint)
            .map_err(|e| local(format!("invalid model base URL {base:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(local(format!("model base URL must be http(s): {base:?}")));
        }
        if let Some(key) = &config.api_key {
            HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .map_err(|_| local("the API key contains invalid characters".to_owned()))?;
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| local(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            config,
            endpoint,
            client,
            rejected: Rejected::default(),
        })
    }

    fn options(&self) -> RequestOptions {
        RequestOptions {
            stream_options: !self.rejected.contains(OptionalParam::StreamOptions),
            tool_choice: !self.rejected.contains(OptionalParam::ToolChoice),
            frequency_penalty: self
                .config
                .frequency_penalty
                .filter(|_| !self.rejected.contains(OptionalParam::FrequencyPenalty)),
        }
    }

    fn scrub(&self, error: ProviderError) -> ProviderError {
        openai_error::scrub(error, self.config.api_key.as_ref())
    }

    /// Sends one request and waits (at most the idle timeout) for the headers.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ProviderError> {
        let mut request = self.client.post(&self.endpoint).json(body);
        if let Some(key) = &self.config.api_key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                    ProviderError::Config {
                        status: 0,
                        message: "the API key contains invalid characters".to_owned(),
                    }
                })?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        match tokio::time::timeout(self.config.idle_timeout, request.send()).await {
            Err(_) => Err(ProviderError::Timeout(self.config.idle_timeout)),
            Ok(Err(error)) => Err(openai_error::from_reqwest(&error)),
            Ok(Ok(response)) => Ok(response),
        }
    }

    /// Reads at most [`MAX_ERROR_BODY`] bytes of a failed response.
    async fn error_body(&self, mut response: reqwest::Response) -> String {
        let mut body = Vec::new();
        while body.len() < MAX_ERROR_BODY {
            let next = tokio::time::timeout(self.config.idle_timeout, response.chunk()).await;
            match next {
                Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
                _ => break,
            }
        }
        body.truncate(MAX_ERROR_BODY);
        String::from_utf8_lossy(&body).into_owned()
    }

    /// The optional parameter a 400 complains about, if it was sent.
    fn rejected_param(
        &self,
        status: u16,
        body: &str,
        sent: &RequestOptions,
    ) -> Option<OptionalParam> {
        if !matches!(status, 400 | 422) {
            return None;
        }
        let message = openai_error::body_message(body).to_ascii_lowercase();
        OptionalParam::ALL.into_iter().find(|param| {
            let was_sent = match param {
                OptionalParam::StreamOptions => sent.stream_options,
                OptionalParam::ToolChoice => sent.tool_choice,
                OptionalParam::FrequencyPenalty => sent.frequency_penalty.is_some(),
            };
            was_sent && message.contains(param.name())
        })
    }

    async fn start(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let parse_tool_text = !request.tools.is_empty();
        // Each retry drops one more rejected parameter, so this ends.
        loop {
            let options = self.options();
            let body = request_body(&self.config.model.name, request, &options);
            tracing::debug!(
                endpoint = %self.endpoint,
                model = %self.config.model.name,
                messages = request.messages.len(),
                tools = request.tools.len(),
                "sending chat request"
            );
            let response = self.send(&body).await?;
            let status = response.status().as_u16();
            if response.status().is_success() {
                return self.success(response, parse_tool_text).await;
            }
            let retry_after = openai_error::retry_after(response.headers());
            let text = self.error_body(response).await;
            if let Some(param) = self.rejected_param(status, &text, &options) {
                tracing::warn!(
                    endpoint = %self.endpoint,
                    parameter = param.name(),
                    "endpoint rejected an optional parameter; retrying without it"
                );
                self.rejected.insert(param);
                continue;
            }
            return Err(openai_error::from_status(status, &text, retry_after));
        }
    }

    /// Turns a 2xx response into a chunk stream (or the error a JSON body carries).
    async fn success(
        &self,
        response: reqwest::Response,
        parse_tool_text: bool,
    ) -> Result<ChunkStream, ProviderError> {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.starts_with("application/json") {
            let text = self.error_body(response).await;
            let value = serde_json::from_str::<Value>(&text).ok();
            return Err(match value.as_ref().and_then(|v| v.get("error")) {
                Some(error) => openai_error::from_error_object(error),
                None => ProviderError::InvalidResponse(
                    "expected an event stream, got a JSON body".to_owned(),
                ),
            });
        }
        Ok(chunk_stream(
            response,
            self.config.idle_timeout,
            parse_tool_text,
            self.config.api_key.clone(),
        ))
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn model(&self) -> &ModelInfo {
        &self.config.model
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChunkStream, ProviderError> {
        self.start(&request).await.map_err(|error| {
            let error = self.scrub(error);
            tracing::debug!(endpoint = %self.endpoint, %error, "chat request failed");
            error
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(base: &str) -> OpenAiConfig {
        OpenAiConfig::new(base, ModelInfo::new("m", None))
    }

    #[test]
    fn endpoint_strips_the_trailing_slash() -> Result<(), ProviderError> {
        let provider = OpenAiProvider::new(config("http://localhost:8080/v1/"))?;
        assert_eq!(
            provider.endpoint,
            "http://localhost:8080/v1/chat/completions"
        );
        Ok(())
    }

    #[test]
    fn bad_urls_are_config_errors() {
        for base in ["not a url", "ftp://x/v1"] {
            assert!(matches!(
                OpenAiProvider::new(config(base)),
                Err(ProviderError::Config { status: 0, .. })
            ));
        }
    }

    #[test]
    fn debug_output_redacts_the_key() -> Result<(), ProviderError> {
        let cfg = config("http://localhost/v1").with_api_key(Secret::new("sk-abcdef123"));
        let provider = OpenAiProvider::new(cfg)?;
        assert!(!format!("{provider:?}").contains("sk-abcdef123"));
        Ok(())
    }

    #[test]
    fn rejection_is_only_for_sent_params_named_in_a_400() -> Result<(), ProviderError> {
        let provider = OpenAiProvider::new(config("http://localhost/v1"))?;
        let sent = provider.options();
        let body =
            r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#;
        assert_eq!(
            provider.rejected_param(400, body, &sent),
            Some(OptionalParam::StreamOptions)
        );
        assert_eq!(provider.rejected_param(500, body, &sent), None);
        let unsent = RequestOptions {
            stream_options: false,
            ..sent
        };
        assert_eq!(provider.rejected_param(400, body, &unsent), None);
        assert_eq!(
            provider.rejected_param(400, "frequency_penalty", &sent),
            None,
            "frequency_penalty is not sent unless configured"
        );
        Ok(())
    }
}
