//! Model providers: the `Provider` trait, the OpenAI-compatible, Anthropic and
//! Gemini implementations, fallback and model metadata.

mod anthropic;
mod complete;
mod endpoint;
mod error;
mod estimate;
mod fallback;
mod gemini;
mod http;
mod metadata;
mod openai;
mod settings;
pub(crate) mod sse;
#[cfg(test)]
mod sse_props;
pub(crate) mod tool_call_text;
#[cfg(test)]
mod tool_call_text_props;
mod types;

pub use anthropic::{AnthropicProvider, MIN_THINKING_BUDGET};
pub use complete::{complete, complete_counted};
pub use endpoint::{connect, ApiKind, EndpointConfig, TextToolCalls};
pub use error::ProviderError;
pub use estimate::{
    estimate_message_tokens, estimate_request_tokens, estimate_tokens, is_unsegmented,
};
pub use fallback::FallbackProvider;
pub use gemini::GeminiProvider;
pub use metadata::{context_window_for, reserve, sees_images, threshold, ModelInfo};
pub use openai::OpenAiProvider;
pub use settings::{FallbackEndpoint, LlmConfig};
pub use types::{
    ChatRequest, Chunk, Image, Message, Role, SignedReasoning, ToolCall, ToolDefinition, Usage,
};

use async_trait::async_trait;
use futures::stream::BoxStream;

/// A stream of chunks from one model call.
pub type ChunkStream = BoxStream<'static, Result<Chunk, ProviderError>>;

/// A chat model that streams.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Metadata of the model the next call goes to (name, context window).
    fn model(&self) -> &ModelInfo;

    /// Starts one model call. Errors before the first chunk come back here,
    /// later ones inside the stream; a stream idle past the provider's timeout
    /// yields [`ProviderError::Timeout`].
    async fn chat_stream(&self, request: ChatRequest) -> Result<ChunkStream, ProviderError>;

    /// Which endpoint serves, when there is a choice (fallbacks); for `/model`.
    fn route(&self) -> Option<String> {
        None
    }

    /// Whether the retry of a failed call may go to another endpoint (a
    /// fallback chain passes over the one that failed).
    fn has_fallbacks(&self) -> bool {
        false
    }

    /// The provider's name in the OpenTelemetry GenAI conventions
    /// (`gen_ai.system`): `openai` for every OpenAI-compatible endpoint.
    fn system(&self) -> &'static str {
        "openai"
    }
}
