//! OpenAI-compatible provider (placeholder, being written).
pub struct OpenAiConfig;
pub struct OpenAiProvider;
