//! The Gemini API provider (`streamGenerateContent` over SSE, function calling).
//!
//! The key goes in the `x-goog-api-key` header (marked sensitive), never in the
//! URL, since URLs end up in errors and logs. Tool-call ids carry Gemini's
//! `thoughtSignature` (see `call_id`), tool schemas are converted to Gemini's
//! OpenAPI subset (see `schema`).

mod call_id;
mod decode;
mod error;
mod schema;
mod wire;

use std::sync::atomic::{AtomicBool, Ordering};

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
use wire::{request_body, RequestOptions};

/// The header carrying the key.
const KEY_HEADER: &str = "x-goog-api-key";

/// An optional generation setting a model may reject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionalParam {
    FrequencyPenalty,
    IncludeThoughts,
}

impl OptionalParam {
    /// Whether a 400's message is about this setting. Gemini's wording varies
    /// ("Penalty is not enabled for models/…", "Thinking is not supported …").
    fn named_in(self, message: &str) -> bool {
        let message = message.to_ascii_lowercase();
        match self {
            OptionalParam::FrequencyPenalty => message.contains("penalty"),
            // "missing a thought_signature" is about the history, not the setting.
            OptionalParam::IncludeThoughts => {
                (message.contains("thinking") || message.contains("thought"))
                    && !message.contains("signature")
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            OptionalParam::FrequencyPenalty => "frequencyPenalty",
            OptionalParam::IncludeThoughts => "thinkingConfig",
        }
    }
}

/// A [`Provider`] for Google's Gemini API.
#[derive(Debug)]
pub struct GeminiProvider {
    config: EndpointConfig,
    /// `{base}/models/{model}:streamGenerateContent?alt=sse` (no key in it).
    endpoint: String,
    client: reqwest::Client,
    /// Settings rejected by this endpoint, remembered for the provider's lifetime.
    no_penalty: AtomicBool,
    no_thoughts: AtomicBool,
}

impl GeminiProvider {
    /// Builds the HTTP client; fails with [`ProviderError::Config`] (status 0) on
    /// an unusable base URL, model name or key.
    pub fn new(config: EndpointConfig) -> Result<Self, ProviderError> {
        let model = config.model.name.trim();
        let model = model.strip_prefix("models/").unwrap_or(model);
        if model.is_empty() || model.contains(['/', '?', '#', ' ']) {
            return Err(http::local_error(format!(
                "invalid Gemini model name {model:?}"
            )));
        }
        let endpoint = http::endpoint(
            &config.base_url,
            &format!("/models/{model}:streamGenerateContent?alt=sse"),
        )?;
        let client = http::client(&config, "")?;
        Ok(Self {
            config,
            endpoint,
            client,
            no_penalty: AtomicBool::new(false),
            no_thoughts: AtomicBool::new(false),
        })
    }

    fn options(&self) -> RequestOptions {
        RequestOptions {
            frequency_penalty: self
                .config
                .frequency_penalty
                .filter(|_| !self.no_penalty.load(Ordering::Relaxed)),
            max_output_tokens: self.config.max_output_tokens,
            include_thoughts: !self.no_thoughts.load(Ordering::Relaxed),
            thinking_budget: self.config.thinking_budget,
        }
    }

    /// The optional setting a 400 complains about, if it was sent.
    fn rejected_param(status: u16, body: &str, sent: &RequestOptions) -> Option<OptionalParam> {
        if status != 400 {
            return None;
        }
        let message = openai_error::body_message(body);
        [
            (
                OptionalParam::FrequencyPenalty,
                sent.frequency_penalty.is_some(),
            ),
            (OptionalParam::IncludeThoughts, sent.include_thoughts),
        ]
        .into_iter()
        .find(|(param, was_sent)| *was_sent && param.named_in(&message))
        .map(|(param, _)| param)
    }

    fn reject(&self, param: OptionalParam) {
        let flag = match param {
            OptionalParam::FrequencyPenalty => &self.no_penalty,
            OptionalParam::IncludeThoughts => &self.no_thoughts,
        };
        flag.store(true, Ordering::Relaxed);
    }

    /// Sends one request and waits (at most the idle timeout) for the headers.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ProviderError> {
        let mut request = self.client.post(&self.endpoint).json(body);
        if let Some(key) = &self.config.api_key {
            request = request.header(KEY_HEADER, http::secret_header("", key.expose())?);
        }
        http::send(request, self.config.idle_timeout).await
    }

    async fn start(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        // Each retry drops one more rejected setting, so this ends.
        loop {
            let options = self.options();
            let body = request_body(request, &options);
            tracing::debug!(
                endpoint = %crate::secrets::shown_url(&self.endpoint),
                messages = request.messages.len(),
                tools = request.tools.len(),
                "sending Gemini request"
            );
            let response = self.send(&body).await?;
            let status = response.status().as_u16();
            if response.status().is_success() {
                return self.success(response).await;
            }
            let retry_after = openai_error::retry_after(response.headers());
            let text = http::body_text(response, self.config.idle_timeout).await;
            if let Some(param) = Self::rejected_param(status, &text, &options) {
                tracing::warn!(
                    endpoint = %crate::secrets::shown_url(&self.endpoint),
                    parameter = param.name(),
                    "Gemini rejected an optional setting; retrying without it"
                );
                self.reject(param);
                continue;
            }
            return Err(error::from_status(status, &text, retry_after));
        }
    }

    /// Turns a 2xx response into a chunk stream (or the error a JSON body carries).
    async fn success(&self, response: reqwest::Response) -> Result<ChunkStream, ProviderError> {
        if http::is_json(&response) {
            let idle = self.config.idle_timeout;
            return Err(http::json_body_error(response, idle, error::from_error_object).await);
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
impl Provider for GeminiProvider {
    fn model(&self) -> &ModelInfo {
        &self.config.model
    }

    fn system(&self) -> &'static str {
        "gcp.gemini"
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

    fn config(base: &str, model: &str) -> EndpointConfig {
        EndpointConfig::new(base, ModelInfo::new(model, None))
    }

    #[test]
    fn endpoint_shapes() -> Result<(), ProviderError> {
        let base = "https://generativelanguage.googleapis.com/v1beta/";
        for model in ["gemini-2.5-flash", "models/gemini-2.5-flash"] {
            let provider = GeminiProvider::new(config(base, model))?;
            assert_eq!(
                provider.endpoint,
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
            );
        }
        for (base, model) in [
            ("not a url", "m"),
            ("ftp://x/v1", "m"),
            ("http://x/v1", "a/b"),
        ] {
            assert!(matches!(
                GeminiProvider::new(config(base, model)),
                Err(ProviderError::Config { status: 0, .. })
            ));
        }
        Ok(())
    }

    #[test]
    fn debug_output_redacts_the_key() -> Result<(), ProviderError> {
        let cfg = config("http://localhost/v1beta", "m").with_api_key(Secret::new("AIza-secret-1"));
        let provider = GeminiProvider::new(cfg)?;
        assert!(!format!("{provider:?}").contains("AIza-secret-1"));
        assert!(!provider.endpoint.contains("AIza-secret-1"));
        Ok(())
    }

    #[test]
    fn rejection_is_only_for_sent_settings_named_in_a_400() {
        let sent = RequestOptions {
            frequency_penalty: Some(0.3),
            max_output_tokens: None,
            include_thoughts: true,
            thinking_budget: None,
        };
        let body = r#"{"error":{"code":400,"message":"Penalty is not enabled for models/gemini-2.5-flash","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(
            GeminiProvider::rejected_param(400, body, &sent),
            Some(OptionalParam::FrequencyPenalty)
        );
        assert_eq!(GeminiProvider::rejected_param(500, body, &sent), None);
        let unsent = RequestOptions {
            frequency_penalty: None,
            ..sent
        };
        assert_eq!(GeminiProvider::rejected_param(400, body, &unsent), None);
        let thinking = r#"{"error":{"code":400,"message":"Thinking is not enabled for models/gemini-2.0-flash"}}"#;
        assert_eq!(
            GeminiProvider::rejected_param(400, thinking, &sent),
            Some(OptionalParam::IncludeThoughts)
        );
        let history = r#"{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts."}}"#;
        assert_eq!(
            GeminiProvider::rejected_param(400, history, &sent),
            None,
            "a history problem is not the thinking setting"
        );
    }
}
