//! The turn loop: stream the model, run tool rounds, feed observations back, stop.

use super::doom_loop::DoomLoopGuard;
use super::events::{RuntimeEvent, StopReason, TurnOutcome};
use super::host::TurnHost;
use super::results::shrink_stale;
use super::round::RoundRunner;
use super::scratchpad::Scratchpad;
use crate::llm::{ChatRequest, Chunk, Message, Provider, ProviderError, Role, ToolCall, Usage};
use crate::tools::ToolRegistry;
use futures::StreamExt;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Static settings of the runtime.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub max_tool_rounds: usize,
    pub system_prompt: String,
    pub data_dir: PathBuf,
    /// Retries of a model call that failed with a recoverable error before any output.
    pub model_retries: u32,
}

/// One turn's input.
pub struct TurnRequest {
    pub session_id: String,
    pub history: Vec<Message>,
    pub input: Message,
    pub host: Arc<dyn TurnHost>,
    pub cancel: CancellationToken,
}

/// The agent: a provider, a tool registry and the loop that joins them.
pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Arc<ToolRegistry>,
    config: AgentConfig,
}

/// Between the texts of two rounds of one turn.
const ROUND_SEPARATOR: &str = "\n\n";

/// Name of the tool that pauses the turn for the user's answer.
pub(crate) const ASK_USER: &str = "ask_user";

impl Agent {
    pub fn new(provider: Arc<dyn Provider>, tools: Arc<ToolRegistry>, config: AgentConfig) -> Agent {
        Agent { provider, tools, config }
    }

    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// Runs one turn on its own task; events arrive on the returned channel and
    /// the last one is always [`RuntimeEvent::Done`].
    pub fn run_turn(self: &Arc<Self>, request: TurnRequest) -> mpsc::Receiver<RuntimeEvent> {
        let (tx, rx) = mpsc::channel(256);
        let agent = Arc::clone(self);
        tokio::spawn(async move {
            let outcome = agent.turn(request, &tx).await;
            let _ = tx.send(RuntimeEvent::Done(outcome)).await;
        });
        rx
    }

    async fn turn(&self, req: TurnRequest, tx: &mpsc::Sender<RuntimeEvent>) -> TurnOutcome {
        let turn_id = uuid::Uuid::new_v4().simple().to_string();
        let started = Instant::now();
        let mut pad = Scratchpad::open(&self.config.data_dir, &req.session_id, &turn_id);
        pad.record("init", json!({ "session": req.session_id, "model": self.provider.model().name, "input": req.input.content }));

        let mut messages = req.history;
        messages.push(req.input.clone());
        let mut new_messages = vec![req.input];
        let mut usage = Usage::default();
        // Text of every round, joined by blank lines: what the user saw stream.
        let mut turn_text = String::new();
        let mut guard = DoomLoopGuard::default();
        let runner = RoundRunner {
            tools: &self.tools,
            host: &req.host,
            data_dir: &self.config.data_dir,
            session_id: &req.session_id,
            cancel: &req.cancel,
            events: tx,
        };

        for round in 1..=self.config.max_tool_rounds {
            let _ = tx.send(RuntimeEvent::ModelStart { round }).await;
            let request = ChatRequest {
                system: self.config.system_prompt.clone(),
                messages: shrink_earlier_results(&messages),
                tools: self.tools.definitions(),
            };
            let reply = tokio::select! {
                r = self.call_model(request, tx, &mut usage, !turn_text.is_empty()) => r,
                () = req.cancel.cancelled() => Err(ModelFailure::Cancelled),
            };
            let reply = match reply {
                Ok(r) => r,
                Err(failure) => {
                    let (text, stop) = failure.explain();
                    pad.record("error", json!({ "round": round, "error": text }));
                    return finish(&mut pad, text, stop, round, usage, new_messages, started);
                }
            };
            if !reply.thinking.is_empty() {
                pad.record("thinking", json!({ "round": round, "text": reply.thinking }));
            }
            let assistant = Message {
                role: Role::Assistant,
                content: reply.text.clone(),
                tool_calls: reply.tool_calls.clone(),
                tool_call_id: None,
                reasoning: (!reply.thinking.is_empty()).then(|| reply.thinking.clone()),
            };
            messages.push(assistant.clone());
            new_messages.push(assistant);
            if !reply.text.is_empty() {
                if !turn_text.is_empty() {
                    turn_text.push_str(ROUND_SEPARATOR);
                }
                turn_text.push_str(&reply.text);
            }
            if reply.tool_calls.is_empty() {
                return finish(&mut pad, turn_text, StopReason::Answered, round, usage, new_messages, started);
            }
            let _ = tx.send(RuntimeEvent::ToolCalls(reply.tool_calls.clone())).await;
            let results = runner.run(&reply.tool_calls, &mut guard, &mut pad).await;
            messages.extend(results.iter().cloned());
            new_messages.extend(results);
            if req.cancel.is_cancelled() {
                return finish(&mut pad, "Cancelled.".into(), StopReason::Cancelled, round, usage, new_messages, started);
            }
            if let Some(question) = asked_question(&reply.tool_calls) {
                new_messages.push(Message::assistant(question.clone()));
                let text = if turn_text.trim().is_empty() { question } else { format!("{turn_text}{ROUND_SEPARATOR}{question}") };
                return finish(&mut pad, text, StopReason::WaitingForUser, round, usage, new_messages, started);
            }
        }
        let text = format!(
            "I stopped after {} tool rounds without reaching an answer. Tell me how to continue, or narrow the request.",
            self.config.max_tool_rounds
        );
        new_messages.push(Message::assistant(text.clone()));
        finish(&mut pad, text, StopReason::MaxRounds, self.config.max_tool_rounds, usage, new_messages, started)
    }

    /// One model call, streamed; retried on recoverable errors before any output.
    async fn call_model(
        &self,
        request: ChatRequest,
        tx: &mpsc::Sender<RuntimeEvent>,
        usage: &mut Usage,
        after_text: bool,
    ) -> Result<ModelReply, ModelFailure> {
        let mut attempt = 0;
        loop {
            let mut reply = ModelReply::default();
            match self.stream_once(request.clone(), tx, usage, &mut reply, after_text).await {
                Ok(()) => return Ok(reply),
                Err(e) if e.is_recoverable() && !reply.produced_output() && attempt < self.config.model_retries => {
                    attempt += 1;
                    let wait = match &e {
                        ProviderError::RateLimited { retry_after } => {
                            retry_after.unwrap_or(Duration::from_secs(2)).min(Duration::from_secs(30))
                        }
                        ProviderError::Timeout(_) => return Err(ModelFailure::Provider(e)),
                        _ => Duration::from_secs(u64::from(attempt)),
                    };
                    let _ = tx.send(RuntimeEvent::Retry { attempt, reason: e.to_string() }).await;
                    tokio::time::sleep(wait).await;
                }
                Err(e) => return Err(ModelFailure::Provider(e)),
            }
        }
    }

    async fn stream_once(
        &self,
        request: ChatRequest,
        tx: &mpsc::Sender<RuntimeEvent>,
        usage: &mut Usage,
        reply: &mut ModelReply,
        after_text: bool,
    ) -> Result<(), ProviderError> {
        let mut stream = self.provider.chat_stream(request).await?;
        while let Some(chunk) = stream.next().await {
            match chunk? {
                Chunk::Text(t) => {
                    if after_text && reply.text.is_empty() && !t.is_empty() {
                        let _ = tx.send(RuntimeEvent::TextDelta(ROUND_SEPARATOR.into())).await;
                    }
                    reply.text.push_str(&t);
                    let _ = tx.send(RuntimeEvent::TextDelta(t)).await;
                }
                Chunk::Thinking(t) => {
                    reply.thinking.push_str(&t);
                    let _ = tx.send(RuntimeEvent::ThinkingDelta(t)).await;
                }
                Chunk::ToolCalls(calls) => reply.tool_calls.extend(calls),
                Chunk::Usage(u) => {
                    usage.add(&u);
                    let _ = tx.send(RuntimeEvent::Usage(u)).await;
                }
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct ModelReply {
    text: String,
    thinking: String,
    tool_calls: Vec<ToolCall>,
}

impl ModelReply {
    fn produced_output(&self) -> bool {
        !self.text.is_empty() || !self.thinking.is_empty() || !self.tool_calls.is_empty()
    }
}

enum ModelFailure {
    Provider(ProviderError),
    Cancelled,
}

impl ModelFailure {
    /// The message the user sees, without internals or secrets.
    fn explain(&self) -> (String, StopReason) {
        let text = match self {
            ModelFailure::Cancelled => return ("Cancelled.".into(), StopReason::Cancelled),
            ModelFailure::Provider(ProviderError::Timeout(d)) => {
                format!("⚠️ The model stopped responding ({}s without output). Please try again.", d.as_secs())
            }
            ModelFailure::Provider(ProviderError::RateLimited { .. }) => {
                "⚠️ The model endpoint is rate limiting requests. Please try again in a minute.".into()
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

/// The question of an `ask_user` call in this round, if any.
fn asked_question(calls: &[ToolCall]) -> Option<String> {
    calls.iter().filter(|c| c.name == ASK_USER).find_map(|c| {
        let v: serde_json::Value = serde_json::from_str(&c.arguments).ok()?;
        v.get("question")?.as_str().map(str::to_owned)
    })
}

/// The request copy of the conversation, with results of earlier rounds shrunk:
/// every tool result before the last assistant message with tool calls.
fn shrink_earlier_results(messages: &[Message]) -> Vec<Message> {
    let last_round = messages.iter().rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty());
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| match (m.role, last_round) {
            (Role::Tool, Some(last)) if i < last => match shrink_stale(&m.content) {
                Some(content) => Message { content, ..m.clone() },
                None => m.clone(),
            },
            _ => m.clone(),
        })
        .collect()
}

fn finish(
    pad: &mut Scratchpad,
    text: String,
    stop: StopReason,
    rounds: usize,
    usage: Usage,
    new_messages: Vec<Message>,
    started: Instant,
) -> TurnOutcome {
    pad.record(
        "final",
        json!({
            "stop": format!("{stop:?}"), "rounds": rounds, "elapsed_ms": started.elapsed().as_millis() as u64,
            "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens, "text": text,
        }),
    );
    TurnOutcome { text, stop, rounds, usage, new_messages }
}
