//! Settings of one model endpoint, the wire protocol it speaks, and building the
//! matching [`Provider`].

use std::sync::Arc;
use std::time::Duration;

use switchboard_platform::Secret;

use super::anthropic::AnthropicProvider;
use super::error::ProviderError;
use super::gemini::GeminiProvider;
use super::metadata::ModelInfo;
use super::openai::OpenAiProvider;
use super::Provider;

/// The wire protocol of an endpoint (`LLM_API`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiKind {
    /// `POST {base}/chat/completions` (OpenAI, DeepSeek, Qwen, Kimi, Ollama, vLLM,
    /// llama.cpp, ...).
    #[default]
    OpenAi,
    /// Anthropic's Messages API: `POST {base}/messages`.
    Anthropic,
    /// Google's Gemini API: `POST {base}/models/{model}:streamGenerateContent`.
    Gemini,
}

impl ApiKind {
    /// The names accepted in `LLM_API`.
    pub const NAMES: &'static str = "openai (default), anthropic or gemini";

    /// Parses `openai`, `anthropic` or `gemini` (case-insensitive).
    pub fn parse(raw: &str) -> Option<ApiKind> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "openai" => Some(ApiKind::OpenAi),
            "anthropic" => Some(ApiKind::Anthropic),
            "gemini" => Some(ApiKind::Gemini),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ApiKind::OpenAi => "openai",
            ApiKind::Anthropic => "anthropic",
            ApiKind::Gemini => "gemini",
        }
    }
}

/// When `<tool_call>{…}</tool_call>` text in an answer is run as tool calls
/// (`LLM_TEXT_TOOL_CALLS`), for weak models that write calls as text. Only the
/// OpenAI-compatible protocol parses them. A block that repeats a tool result
/// of the conversation (a quoted page, file or task output) never runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextToolCalls {
    /// Only when the model made no native tool calls and the blocks are the
    /// whole answer (nothing but whitespace around them).
    #[default]
    Auto,
    /// Blocks anywhere in the answer run (still never a quoted tool result).
    On,
    /// Never: the text stays text.
    Off,
}

impl TextToolCalls {
    /// The names accepted in `LLM_TEXT_TOOL_CALLS`.
    pub const NAMES: &'static str = "auto (default), on or off";

    /// Parses `auto`, `on` or `off` (case-insensitive).
    pub fn parse(raw: &str) -> Option<TextToolCalls> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(TextToolCalls::Auto),
            "on" => Some(TextToolCalls::On),
            "off" => Some(TextToolCalls::Off),
            _ => None,
        }
    }
}

/// Settings of one model endpoint, whatever protocol it speaks.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Base URL including the version segment, e.g. `https://api.openai.com/v1`,
    /// `https://api.anthropic.com/v1`,
    /// `https://generativelanguage.googleapis.com/v1beta`.
    pub base_url: String,
    /// The endpoint's key, sent the way its protocol expects (a bearer token,
    /// `x-api-key`, `x-goog-api-key`); local servers often need none.
    pub api_key: Option<Secret>,
    pub model: ModelInfo,
    /// A stream silent for this long fails with [`ProviderError::Timeout`]; also
    /// bounds the wait for the response headers.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// Sent when set (endpoints that reject it get requests without it).
    pub frequency_penalty: Option<f32>,
    /// Upper bound on generated tokens per call. Anthropic requires one (the
    /// provider uses its default when unset); others send it only when set.
    pub max_output_tokens: Option<u32>,
    /// Thinking tokens per call (Anthropic extended thinking, Gemini's
    /// `thinkingBudget`); `None` leaves the endpoint's default.
    pub thinking_budget: Option<u32>,
    /// When text tool calls run (OpenAI-compatible endpoints only).
    pub text_tool_calls: TextToolCalls,
}

impl EndpointConfig {
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
            max_output_tokens: None,
            thinking_budget: None,
            text_tool_calls: TextToolCalls::default(),
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

/// Builds the provider for `api`; fails with [`ProviderError::Config`] (status 0)
/// on an unusable base URL or key.
pub fn connect(api: ApiKind, config: EndpointConfig) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(match api {
        ApiKind::OpenAi => Arc::new(OpenAiProvider::new(config)?),
        ApiKind::Anthropic => Arc::new(AnthropicProvider::new(config)?),
        ApiKind::Gemini => Arc::new(GeminiProvider::new(config)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_names_round_trip() {
        for api in [ApiKind::OpenAi, ApiKind::Anthropic, ApiKind::Gemini] {
            assert_eq!(ApiKind::parse(api.name()), Some(api));
        }
        assert_eq!(ApiKind::parse(" Anthropic "), Some(ApiKind::Anthropic));
        assert_eq!(ApiKind::parse("claude"), None);
        assert_eq!(TextToolCalls::parse(" OFF"), Some(TextToolCalls::Off));
        assert_eq!(TextToolCalls::parse("yes"), None);
    }
}
