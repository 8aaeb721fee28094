//! The model endpoints as configured (`LLM_*`, read by `crate::config`):
//! the primary and its fallbacks.

use super::{ApiKind, TextToolCalls};
use std::time::Duration;
use switchboard_platform::Secret;

/// The model endpoint.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// The protocol the endpoint speaks (`LLM_API`, default OpenAI-compatible).
    pub api: ApiKind,
    /// Base URL with the version segment; OpenAI-style requests go to
    /// `{base_url}/chat/completions`, Anthropic's to `{base_url}/messages`.
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub model: String,
    pub context_window: Option<u32>,
    /// A stream idle this long is a timeout.
    pub idle_timeout: Duration,
    /// `frequency_penalty` sent with every request (`LLM_FREQUENCY_PENALTY`,
    /// -2.0 to 2.0); unset sends none.
    pub frequency_penalty: Option<f32>,
    /// Generated tokens per call (`LLM_MAX_OUTPUT_TOKENS`); Anthropic needs a
    /// bound and uses 8192 when unset.
    pub max_output_tokens: Option<u32>,
    /// Tokens the model may think before answering (`LLM_THINKING_BUDGET`):
    /// Anthropic extended thinking, Gemini's thinking budget; unset or 0
    /// leaves the endpoint's default (Anthropic: no extended thinking).
    pub thinking_budget: Option<u32>,
    /// When `<tool_call>` text in an answer runs as tool calls
    /// (`LLM_TEXT_TOOL_CALLS`, default auto).
    pub text_tool_calls: TextToolCalls,
    /// Endpoints tried in order when the one before fails recoverably
    /// (`LLM_FALLBACK_<n>_*`, n = 1..=3).
    pub fallbacks: Vec<FallbackEndpoint>,
}

/// A fallback model endpoint; timeouts and parameters are the primary's.
#[derive(Debug, Clone)]
pub struct FallbackEndpoint {
    pub api: ApiKind,
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub model: String,
    pub context_window: Option<u32>,
    /// `LLM_FALLBACK_<n>_TEXT_TOOL_CALLS`, else the primary's setting.
    pub text_tool_calls: TextToolCalls,
}
