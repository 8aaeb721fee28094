//! The OpenAI-compatible provider (OpenAI, DeepSeek, Qwen, Kimi, Ollama, vLLM,
//! llama.cpp) over reqwest and SSE.

pub(super) mod error;
mod stream;
mod tool_images;
mod wire;

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use reqwest::header::AUTHORIZATION;
use serde_json::Value;

use super::endpoint::{EndpointConfig, TextToolCalls};
use super::error::ProviderError;
use super::http;
use super::metadata::ModelInfo;
use super::sse;
use super::types::{ChatRequest, Role};
use super::{ChunkStream, Provider};
use error as openai_error;
use stream::StreamDecoder;
use wire::{request_body, RequestOptions};

/// The scheme of the `Authorization` header.
const BEARER: &str = "Bearer ";

/// An optional request parameter an endpoint may reject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionalParam {
    StreamOptions,
    ToolChoice,
    FrequencyPenalty,
    /// Reasoning sent back on assistant messages (strict hosts such as Groq
    /// and Cerebras refuse the property).
    ReasoningContent,
}

impl OptionalParam {
    const ALL: [OptionalParam; 4] = [
        OptionalParam::StreamOptions,
        OptionalParam::ToolChoice,
        OptionalParam::FrequencyPenalty,
        OptionalParam::ReasoningContent,
    ];

    fn name(self) -> &'static str {
        match self {
            OptionalParam::StreamOptions => "stream_options",
            OptionalParam::ToolChoice => "tool_choice",
            OptionalParam::FrequencyPenalty => "frequency_penalty",
            OptionalParam::ReasoningContent => "reasoning_content",
        }
    }

    /// Whether `body` carries the parameter.
    fn sent_in(self, body: &Value) -> bool {
        match self {
            OptionalParam::ReasoningContent => body["messages"]
                .as_array()
                .is_some_and(|messages| messages.iter().any(|m| m.get(self.name()).is_some())),
            _ => body.get(self.name()).is_some(),
        }
    }
}

/// Parameters this endpoint has rejected; remembered for the provider's lifetime.
#[derive(Debug, Default)]
struct Rejected([AtomicBool; 4]);

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
    config: EndpointConfig,
    endpoint: String,
    client: reqwest::Client,
    rejected: Rejected,
}

impl OpenAiProvider {
    /// Builds the HTTP client; fails with [`ProviderError::Config`] (status 0) on
    /// an unusable base URL or key.
    pub fn new(config: EndpointConfig) -> Result<Self, ProviderError> {
        let endpoint = http::endpoint(&config.base_url, "/chat/completions")?;
        let client = http::client(&config, BEARER)?;
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
            reasoning_content: !self.rejected.contains(OptionalParam::ReasoningContent),
        }
    }

    /// Sends one request and waits (at most the idle timeout) for the headers.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ProviderError> {
        let mut request = self.client.post(&self.endpoint).json(body);
        if let Some(key) = &self.config.api_key {
            request = request.header(AUTHORIZATION, http::secret_header(BEARER, key.expose())?);
        }
        http::send(request, self.config.idle_timeout).await
    }

    /// The optional parameter a 400 complains about, if the request `sent` carried it.
    fn rejected_param(status: u16, body: &str, sent: &Value) -> Option<OptionalParam> {
        if !matches!(status, 400 | 422) {
            return None;
        }
        let message = openai_error::body_message(body).to_ascii_lowercase();
        // A host that needs the reasoning back (DeepSeek) names it too when
        // it is missing somewhere; that is no reason to stop sending it.
        let wants_more = message.contains("missing") || message.contains("required");
        OptionalParam::ALL.into_iter().find(|param| {
            param.sent_in(sent)
                && message.contains(param.name())
                && !(*param == OptionalParam::ReasoningContent && wants_more)
        })
    }

    async fn start(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        // Without tools nothing can be called; text calls never repeat a tool result.
        let text_calls = if request.tools.is_empty() {
            TextToolCalls::Off
        } else {
            self.config.text_tool_calls
        };
        // Each retry drops one more rejected parameter, so this ends.
        loop {
            let options = self.options();
            let body = request_body(&self.config.model.name, request, &options);
            tracing::debug!(
                endpoint = %crate::secrets::shown_url(&self.endpoint),
                model = %self.config.model.name,
                messages = request.messages.len(),
                tools = request.tools.len(),
                "sending chat request"
            );
            let response = self.send(&body).await?;
            let status = response.status().as_u16();
            if response.status().is_success() {
                return self.success(response, text_calls, request).await;
            }
            let retry_after = openai_error::retry_after(response.headers());
            let text = http::body_text(response, self.config.idle_timeout).await;
            if let Some(param) = Self::rejected_param(status, &text, &body) {
                tracing::warn!(
                    endpoint = %crate::secrets::shown_url(&self.endpoint),
                    parameter = param.name(),
                    "endpoint rejected an optional parameter; retrying without it"
                );
                self.rejected.insert(param);
                continue;
            }
            if status == 404 {
                return Err(openai_error::not_found(
                    &self.endpoint,
                    &self.config.base_url,
                    &text,
                ));
            }
            return Err(openai_error::from_status(status, &text, retry_after));
        }
    }

    /// Turns a 2xx response into a chunk stream (or the error a JSON body carries).
    async fn success(
        &self,
        response: reqwest::Response,
        text_calls: TextToolCalls,
        request: &ChatRequest,
    ) -> Result<ChunkStream, ProviderError> {
        if http::is_json(&response) {
            let idle = self.config.idle_timeout;
            return Err(
                http::json_body_error(response, idle, openai_error::from_error_object).await,
            );
        }
        Ok(sse::chunk_stream(
            response,
            self.config.idle_timeout,
            self.config.api_key.clone(),
            StreamDecoder::new(text_calls, tool_results(request, text_calls)),
        ))
    }
}

/// The request's tool results, which a text tool call must not repeat (none
/// needed when text calls are off).
fn tool_results(request: &ChatRequest, text_calls: TextToolCalls) -> Vec<String> {
    if text_calls == TextToolCalls::Off {
        return Vec::new();
    }
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .collect()
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn model(&self) -> &ModelInfo {
        &self.config.model
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
        EndpointConfig::new(base, ModelInfo::new("m", None))
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
        let mut assistant = crate::llm::Message::assistant("hmm");
        assistant.reasoning = Some("thought".into());
        let request = ChatRequest {
            system: String::new(),
            messages: vec![crate::llm::Message::user("go on"), assistant],
            tools: Vec::new(),
        };
        let sent = request_body("m", &request, &provider.options());
        let rejected = |status, message: &str| {
            let body = serde_json::json!({"error": {"message": message}}).to_string();
            OpenAiProvider::rejected_param(status, &body, &sent)
        };
        let unrecognized = "Unrecognized request argument supplied: stream_options";
        assert_eq!(
            rejected(400, unrecognized),
            Some(OptionalParam::StreamOptions)
        );
        assert_eq!(rejected(500, unrecognized), None);
        let unsent = request_body(
            "m",
            &request,
            &RequestOptions {
                stream_options: false,
                ..provider.options()
            },
        );
        let body = serde_json::json!({"error": {"message": unrecognized}}).to_string();
        assert_eq!(OpenAiProvider::rejected_param(400, &body, &unsent), None);
        assert_eq!(
            rejected(400, "frequency_penalty"),
            None,
            "frequency_penalty is not sent unless configured"
        );
        assert_eq!(
            rejected(400, "tool_choice is not supported"),
            None,
            "tool_choice goes only with tools"
        );
        // Groq's wording for a property of a message.
        let groq = "'messages.0' : for 'role:assistant' the following must be satisfied[('messages.0' : property 'reasoning_content' is unsupported)]";
        assert_eq!(rejected(400, groq), Some(OptionalParam::ReasoningContent));
        let deepseek =
            "Missing `reasoning_content` field in the assistant message at message index 3";
        assert_eq!(rejected(400, deepseek), None, "it wants more, not less");
        Ok(())
    }
}
