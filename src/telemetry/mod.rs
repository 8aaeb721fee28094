//! OpenTelemetry traces: one trace per turn, with a span per model call (the
//! GenAI semantic conventions), per tool call and per platform call.
//!
//! Spans carry names, counts and outcomes only: never message text, prompts,
//! tool arguments or results, URLs or keys. They have a target of their own
//! ([`TARGET`]): the trace layer takes nothing else, the logs never show them,
//! and with no exporter configured they are disabled at their call sites.

mod export;
mod settings;

pub use export::{layer, Telemetry, TelemetryError};
pub use settings::{OtelConfig, RootSampling, Sampling, DEFAULT_SERVICE_NAME};

use crate::domain::SessionKey;
use crate::llm::{ProviderError, Usage};
use switchboard_platform::Platform;
use tracing::field::Empty;
use tracing::Span;

/// The target of every span meant for export.
pub const TARGET: &str = "switchboard::otel";

/// The root span of one turn (a message, a notification, a schedule, a
/// resumed approval) in the session of `key`, named by a short hash of the
/// key (platform, chat, thread, user): no platform id is exported.
pub(crate) fn turn_span(key: &SessionKey) -> Span {
    let named = format!("{key:?}");
    tracing::info_span!(
        target: TARGET,
        "turn",
        platform = key.platform.as_str(),
        session.id = %session_hash(&named),
    )
}

/// The first 12 hex digits of the SHA-256 of a session's key: enough to
/// tell the turns of one session apart from another's, nothing more.
fn session_hash(session: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(session.as_bytes());
    crate::hex::encode(&digest[..6])
}

/// One model call to `model` of `system` (`openai`, `anthropic`,
/// `gcp.gemini`): `chat {model}`.
pub(crate) fn chat_span(system: &'static str, model: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.system = system,
        gen_ai.provider.name = system,
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// What a model call came to: the tokens it counted, and the model that
/// answered or the kind of its failure.
pub(crate) fn chat_done(span: &Span, model: &str, usage: &Usage, error: Option<&ProviderError>) {
    // As i64: the trace layer exports a u64 as text.
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.record("gen_ai.usage.input_tokens", count(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", count(usage.output_tokens));
    match error {
        None => {
            span.record("gen_ai.response.model", model);
        }
        Some(e) => {
            span.record("error.type", error_type(e));
            span.record("otel.status_code", "error");
        }
    }
}

/// The failure's kind, never its message (it may quote the endpoint).
fn error_type(e: &ProviderError) -> &'static str {
    match e {
        ProviderError::RateLimited { .. } => "rate_limited",
        ProviderError::Timeout(_) => "timeout",
        ProviderError::Network(_) => "network",
        ProviderError::Server { .. } => "server",
        ProviderError::Config { .. } => "refused",
        ProviderError::InvalidResponse(_) => "invalid_response",
    }
}

/// One tool call: `execute_tool {name}`.
pub(crate) fn tool_span(name: &str, call_id: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        tool.outcome = Empty,
    )
}

/// How a tool call ended: `ok`, `error` or `paused` (waiting for approval).
pub(crate) fn tool_done(span: &Span, outcome: &'static str) {
    span.record("tool.outcome", outcome);
    if outcome == "error" {
        span.record("otel.status_code", "error");
    }
}

/// One call to a chat platform: `op` is `send`, `edit`, `send_file` or
/// `answer_press`.
pub(crate) fn platform_span(platform: Platform, op: &'static str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "platform",
        otel.name = op,
        otel.kind = "client",
        otel.status_code = Empty,
        messaging.system = platform.as_str(),
        messaging.operation.name = op,
    )
}

/// Marks a failed platform call.
pub(crate) fn platform_failed(span: &Span) {
    span.record("otel.status_code", "error");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_hash_is_short_stable_and_not_the_id() {
        let a = session_hash("0b7e2c1e-8f4c-4d3b-9a51-2f0c6d7e8a90");
        assert_eq!(a.len(), 12);
        assert_eq!(a, session_hash("0b7e2c1e-8f4c-4d3b-9a51-2f0c6d7e8a90"));
        assert_ne!(a, session_hash("another"));
        assert!(!"0b7e2c1e-8f4c-4d3b-9a51-2f0c6d7e8a90".contains(&a));
    }
}
