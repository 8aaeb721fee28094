//! One model call: the streamed reply collected into text, thinking and tool
//! calls (forwarded as runtime events as they arrive), retried on recoverable
//! errors before any output, and failures explained for the user.

use super::events::{RuntimeEvent, StopReason};
use crate::llm::{ChatRequest, Chunk, Provider, ProviderError, SignedReasoning, ToolCall, Usage};
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc;

/// Between the texts of two rounds of one turn.
pub(super) const ROUND_SEPARATOR: &str = "\n\n";

/// One model call, streamed; retried on recoverable errors before any output.
pub(super) async fn call_model(
    provider: &dyn Provider,
    retries: u32,
    request: ChatRequest,
    tx: &mpsc::Sender<RuntimeEvent>,
    usage: &mut Usage,
    text_out: TextOut,
) -> Result<ModelReply, ModelFailure> {
    let mut attempt = 0;
    loop {
        let mut reply = ModelReply::default();
        match stream_once(provider, request.clone(), tx, usage, &mut reply, text_out).await {
            Ok(()) => return Ok(reply),
            Err(e) if e.is_recoverable() && !reply.produced_output() && attempt < retries => {
                attempt += 1;
                let wait = match &e {
                    ProviderError::RateLimited { retry_after } => retry_after
                        .unwrap_or(Duration::from_secs(2))
                        .min(Duration::from_secs(30)),
                    ProviderError::Timeout(_) => return Err(ModelFailure::Provider(e)),
                    _ => Duration::from_secs(u64::from(attempt)),
                };
                let _ = tx
                    .send(RuntimeEvent::Retry {
                        attempt,
                        reason: e.to_string(),
                    })
                    .await;
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(ModelFailure::Provider(e)),
        }
    }
}

async fn stream_once(
    provider: &dyn Provider,
    request: ChatRequest,
    tx: &mpsc::Sender<RuntimeEvent>,
    usage: &mut Usage,
    reply: &mut ModelReply,
    text_out: TextOut,
) -> Result<(), ProviderError> {
    let mut stream = provider.chat_stream(request).await?;
    while let Some(chunk) = stream.next().await {
        match chunk? {
            Chunk::Text(t) if text_out == TextOut::Hold => reply.text.push_str(&t),
            Chunk::Text(t) => {
                if text_out == TextOut::AfterText && reply.text.is_empty() && !t.is_empty() {
                    let _ = tx
                        .send(RuntimeEvent::TextDelta(ROUND_SEPARATOR.into()))
                        .await;
                }
                reply.text.push_str(&t);
                let _ = tx.send(RuntimeEvent::TextDelta(t)).await;
            }
            Chunk::Thinking(t) => {
                reply.thinking.push_str(&t);
                let _ = tx.send(RuntimeEvent::ThinkingDelta(t)).await;
            }
            Chunk::SignedReasoning(block) => reply.signed_reasoning.push(block),
            Chunk::ToolCalls(calls) => reply.tool_calls.extend(calls),
            Chunk::Usage(u) => {
                usage.add(&u);
                let _ = tx.send(RuntimeEvent::Usage(u)).await;
            }
        }
    }
    Ok(())
}

/// What happens to the text of a model call as it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextOut {
    /// Streamed as the turn's first text.
    Stream,
    /// Streamed after earlier rounds' text (a separator goes first).
    AfterText,
    /// Kept back: it may be an answer the intent guard sends back.
    Hold,
}

#[derive(Default)]
pub(super) struct ModelReply {
    pub(super) text: String,
    pub(super) thinking: String,
    pub(super) signed_reasoning: Vec<SignedReasoning>,
    pub(super) tool_calls: Vec<ToolCall>,
}

impl ModelReply {
    fn produced_output(&self) -> bool {
        !self.text.is_empty()
            || !self.thinking.is_empty()
            || !self.signed_reasoning.is_empty()
            || !self.tool_calls.is_empty()
    }
}

pub(super) enum ModelFailure {
    Provider(ProviderError),
    Cancelled,
}

impl ModelFailure {
    /// The message the user sees, without internals or secrets.
    pub(super) fn explain(&self) -> (String, StopReason) {
        let text = match self {
            ModelFailure::Cancelled => return ("Cancelled.".into(), StopReason::Cancelled),
            ModelFailure::Provider(ProviderError::Timeout(d)) => {
                format!(
                    "⚠️ The model stopped responding ({}s without output). Please try again.",
                    d.as_secs()
                )
            }
            ModelFailure::Provider(ProviderError::RateLimited { .. }) => {
                "⚠️ The model endpoint is rate limiting requests. Please try again in a minute."
                    .into()
            }
            ModelFailure::Provider(ProviderError::Network(_)) => {
                "⚠️ The model endpoint can't be reached right now. Please try again later.".into()
            }
            ModelFailure::Provider(ProviderError::Server { status, .. }) => {
                format!("⚠️ The model endpoint failed (HTTP {status}). Please try again.")
            }
            ModelFailure::Provider(ProviderError::Config { status, .. }) => {
                format!("⚠️ The model endpoint refused the request (HTTP {status}). The operator should run `switchboard doctor`.")
            }
            ModelFailure::Provider(ProviderError::InvalidResponse(_)) => {
                "⚠️ The model sent a malformed response. Please try again.".into()
            }
        };
        if let ModelFailure::Provider(e) = self {
            tracing::warn!(error = %e, "model call failed");
        }
        (text, StopReason::ModelError)
    }
}
