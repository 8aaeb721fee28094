//! One model call: the streamed reply collected into text, thinking and tool
//! calls (forwarded as runtime events as they arrive), retried on recoverable
//! errors before any output, and failures explained for the user.

use super::events::{RuntimeEvent, StopReason};
use crate::llm::{ChatRequest, Chunk, Provider, ProviderError, SignedReasoning, ToolCall, Usage};
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::Instrument;

/// Between the texts of two rounds of one turn.
pub(super) const ROUND_SEPARATOR: &str = "\n\n";

/// Times a call may come back for a request sized anew (bounds the loop
/// when endpoints keep failing over to smaller windows).
const MAX_RESIZES: u32 = 3;

/// The retries left to one model call, across requests sized anew.
pub(super) struct Retries {
    max: u32,
    attempt: u32,
    /// A stalled stream was retried (only once).
    timeout_retried: bool,
    resized: u32,
}

impl Retries {
    /// `max` retries of recoverable errors before any output.
    pub(super) fn new(max: u32) -> Retries {
        Retries {
            max,
            attempt: 0,
            timeout_retried: false,
            resized: 0,
        }
    }

    /// How long to wait before retrying after `e`, or `None` when it is final.
    fn next(&mut self, e: &ProviderError, provider: &dyn Provider) -> Option<Duration> {
        if !e.is_recoverable() || self.attempt >= self.max {
            return None;
        }
        let wait = match e {
            ProviderError::RateLimited { retry_after } => retry_after
                .unwrap_or(Duration::from_secs(2))
                .min(Duration::from_secs(30)),
            // A stalled endpoint would likely stall again, and the user has
            // waited long already: retried only where the retry goes to
            // another endpoint (the chain passed over the one that stalled),
            // and once.
            ProviderError::Timeout(_) if provider.has_fallbacks() && !self.timeout_retried => {
                self.timeout_retried = true;
                Duration::ZERO
            }
            ProviderError::Timeout(_) => return None,
            _ => Duration::from_secs(u64::from(self.attempt + 1)),
        };
        self.attempt += 1;
        Some(wait)
    }

    /// Whether the endpoint in front now has a smaller window than the
    /// request was sized for (a fallback took over), so it must be sized anew.
    fn resize(&mut self, provider: &dyn Provider, sized_for: u32) -> bool {
        let due = provider.model().context_window < sized_for && self.resized < MAX_RESIZES;
        self.resized += u32::from(due);
        due
    }
}

/// How a model call ended, short of failing.
pub(super) enum Called {
    Reply(ModelReply),
    /// The request was sized for a larger window than the endpoint now in
    /// front has: size it anew (compacting) and call again.
    Resize,
}

/// Where a model call's output goes: its events, the turn's usage, and the
/// text shown so far (kept should the turn be stopped mid-call).
pub(super) struct CallSink<'a> {
    pub(super) tx: &'a mpsc::Sender<RuntimeEvent>,
    pub(super) usage: &'a mut Usage,
    pub(super) shown: &'a mut String,
}

/// One model call of `request`, sized for a window of `sized_for` tokens,
/// streamed; retried on recoverable errors before any output.
pub(super) async fn call_model(
    provider: &dyn Provider,
    retries: &mut Retries,
    sized_for: u32,
    request: ChatRequest,
    sink: CallSink<'_>,
    text_out: TextOut,
) -> Result<Called, ModelFailure> {
    let CallSink { tx, usage, shown } = sink;
    // Summarizing for compaction may have failed over already.
    if retries.resize(provider, sized_for) {
        return Ok(Called::Resize);
    }
    loop {
        let mut reply = ModelReply::default();
        match stream_once(
            provider,
            request.clone(),
            tx,
            usage,
            &mut reply,
            text_out,
            shown,
        )
        .await
        {
            Ok(()) => return Ok(Called::Reply(reply)),
            Err(e) if !reply.produced_output() => {
                let Some(wait) = retries.next(&e, provider) else {
                    return Err(ModelFailure::Provider(e));
                };
                let _ = tx
                    .send(RuntimeEvent::Retry {
                        attempt: retries.attempt,
                        reason: e.to_string(),
                    })
                    .await;
                // The endpoint that failed is passed over now; the next one
                // needs no wait, only a request it can take.
                if retries.resize(provider, sized_for) {
                    return Ok(Called::Resize);
                }
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(ModelFailure::Provider(e)),
        }
    }
}

/// One request to the endpoint, traced as a `chat {model}` span with the
/// tokens it used (added to the turn's `usage`).
async fn stream_once(
    provider: &dyn Provider,
    request: ChatRequest,
    tx: &mpsc::Sender<RuntimeEvent>,
    usage: &mut Usage,
    reply: &mut ModelReply,
    text_out: TextOut,
    shown_so_far: &mut String,
) -> Result<(), ProviderError> {
    let span = crate::telemetry::chat_span(provider.system(), &provider.model().name);
    let mut used = Usage::default();
    let out = stream_reply(
        provider,
        request,
        tx,
        &mut used,
        reply,
        text_out,
        shown_so_far,
    )
    .instrument(span.clone())
    .await;
    usage.add(&used);
    crate::telemetry::chat_done(&span, &provider.model().name, &used, out.as_ref().err());
    out
}

async fn stream_reply(
    provider: &dyn Provider,
    request: ChatRequest,
    tx: &mpsc::Sender<RuntimeEvent>,
    usage: &mut Usage,
    reply: &mut ModelReply,
    text_out: TextOut,
    shown_so_far: &mut String,
) -> Result<(), ProviderError> {
    let mut stream = provider.chat_stream(request).await?;
    // A key the endpoint echoes is scrubbed before the chat sees any of it,
    // even split across deltas (the start of a possible secret waits).
    let mut text_scrub = crate::secrets::stream();
    let mut thinking_scrub = crate::secrets::stream();
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
                let shown = text_scrub.push(&t);
                if !shown.is_empty() {
                    // Kept for history should the turn be stopped mid-call.
                    shown_so_far.push_str(&shown);
                    let _ = tx.send(RuntimeEvent::TextDelta(shown)).await;
                }
            }
            Chunk::Thinking(t) => {
                reply.thinking.push_str(&t);
                let shown = thinking_scrub.push(&t);
                if !shown.is_empty() {
                    let _ = tx.send(RuntimeEvent::ThinkingDelta(shown)).await;
                }
            }
            Chunk::SignedReasoning(block) => reply.signed_reasoning.push(block),
            Chunk::ReasoningContent(r) => reply.reasoning_content.push_str(&r),
            Chunk::ToolCalls(calls) => reply.tool_calls.extend(calls),
            Chunk::Usage(u) => {
                usage.add(&u);
                let _ = tx.send(RuntimeEvent::Usage(u)).await;
            }
        }
    }
    for (rest, event) in [
        (
            text_scrub.finish(),
            RuntimeEvent::TextDelta as fn(String) -> RuntimeEvent,
        ),
        (thinking_scrub.finish(), RuntimeEvent::ThinkingDelta),
    ] {
        if !rest.is_empty() {
            let _ = tx.send(event(rest)).await;
        }
    }
    reply.text = crate::secrets::scrub_string(std::mem::take(&mut reply.text));
    // No tool needs the gateway's own secrets: a model that got hold of one
    // cannot send it anywhere (a `web_fetch` URL, a command) either.
    for call in &mut reply.tool_calls {
        call.arguments = crate::secrets::scrub_string(std::mem::take(&mut call.arguments));
    }
    reply.thinking = crate::secrets::scrub_string(std::mem::take(&mut reply.thinking));
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
    /// The reasoning to send back as `reasoning_content` (OpenAI-compatible
    /// endpoints only; empty when another protocol thought).
    pub(super) reasoning_content: String,
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
    /// The provider's error for the operator (audit log, console), scrubbed
    /// of known secrets; `None` when the turn was cancelled.
    pub(super) fn cause(&self) -> Option<String> {
        match self {
            ModelFailure::Cancelled => None,
            ModelFailure::Provider(e) => Some(crate::secrets::scrub_string(e.to_string())),
        }
    }

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
