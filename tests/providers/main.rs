//! The model providers (OpenAI-compatible, Anthropic, Gemini, mixed fallback) against their fake servers.
//!
//! One test binary for the area; each module was a test binary of its own.

#[path = "../support/mod.rs"]
mod support;

mod provider_anthropic;
mod provider_gemini;
mod provider_images;
mod provider_mixed_fallback;
mod provider_openai;
