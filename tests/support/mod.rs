//! Fake servers for end-to-end tests: OpenAI-compatible, Anthropic and Gemini LLMs, the Telegram Bot
//! API and Discord (REST + gateway), all on 127.0.0.1 and as strict as the real ones;
//! an in-memory test channel and the harness that runs the real core against them.
#![allow(dead_code, clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod deps;
pub mod e2e;
pub mod effects;
pub mod fake_anthropic;
pub mod fake_discord;
pub mod fake_gemini;
pub mod fake_llm;
pub mod fake_otlp;
pub mod fake_search;
pub mod fake_stt;
pub mod fake_telegram;
pub mod fake_tts;
pub mod images;
pub mod intake;
pub mod multipart;
pub mod postgres;
pub mod process;
pub mod provider;
pub mod serve;
pub mod skip;
pub mod tcp_proxy;
pub mod telegram_run;
pub mod test_channel;
