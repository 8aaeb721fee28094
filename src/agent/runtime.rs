//! The turn loop: stream the model, run tool rounds, feed observations back, stop.

use super::compaction;
use super::deadline::Deadline;
use super::doom_loop::DoomLoopGuard;
use super::events::{RuntimeEvent, StopReason, TurnOutcome};
use super::intent::{self, IntentRules};
use super::intent_check::{IntentCheck, Verdict};
use super::model_call::{call_model, CallSink, Called, ModelFailure, ModelReply, Retries, TextOut};
use super::requests::Drive;
pub use super::requests::{ResumeRequest, TurnModel, TurnRequest};
use super::round::RoundRunner;
use super::scratchpad::Scratchpad;
use super::turn::{asked_question, names, shrink_earlier_results, Next, Turn, TurnTally};
use crate::llm::{ChatRequest, Message, Provider, ProviderError, Role, ToolCall};
use crate::tools::ToolRegistry;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::Instrument;

/// Static settings of the runtime.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub max_tool_rounds: usize,
    pub system_prompt: String,
    pub data_dir: PathBuf,
    /// Retries of a model call that failed with a recoverable error before any output.
    pub model_retries: u32,
    /// The longest a foreground tool call may run before the registry gives up
    /// on it (a safety net above the tools' own timeouts).
    pub tool_timeout: Duration,
    /// Requests that must be answered from a tool (the intent guard).
    pub intents: IntentRules,
    /// The longest one turn may take, streaming and tools included, approval
    /// waits excluded (`TURN_DEADLINE_SECS`).
    pub turn_deadline: Duration,
    /// Where the images of user messages are loaded from; `None`: the model
    /// is never sent images (each stays a placeholder).
    pub images: Option<super::Images>,
}

/// Shown above the answer when the endpoint refused the images of a call.
const IMAGES_REFUSED: &str =
    "_(This model can't see images, so I answered from the text; your file is saved for tools.)_";

/// [`AgentConfig::tool_timeout`] by default: above `exec_command`'s 600 s cap.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(900);

/// The agent: a provider, a tool registry and the loop that joins them.
pub struct Agent {
    provider: Arc<dyn Provider>,
    tools: Arc<ToolRegistry>,
    config: AgentConfig,
}

/// Name of the tool that pauses the turn for the user's answer.
pub(crate) const ASK_USER: &str = "ask_user";

impl Agent {
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Arc<ToolRegistry>,
        config: AgentConfig,
    ) -> Agent {
        Agent {
            provider,
            tools,
            config,
        }
    }

    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// The agent's own model: its provider, with images when they are on.
    pub(super) fn own_model(&self) -> TurnModel {
        TurnModel {
            provider: Arc::clone(&self.provider),
            vision: true,
            tools: None,
        }
    }

    pub(super) fn spawn(self: &Arc<Self>, drive: Drive) -> mpsc::Receiver<RuntimeEvent> {
        let (tx, rx) = mpsc::channel(256);
        let agent = Arc::clone(self);
        // The turn's span (see `crate::telemetry`) goes along.
        tokio::spawn(
            async move {
                let outcome = agent.drive(drive, &tx).await;
                let _ = tx.send(RuntimeEvent::Done(outcome)).await;
            }
            .in_current_span(),
        );
        rx
    }

    async fn drive(&self, d: Drive, tx: &mpsc::Sender<RuntimeEvent>) -> TurnOutcome {
        let Drive {
            session_id,
            trace_id,
            origin,
            mut messages,
            new_from,
            pending,
            resolved,
            host,
            cancel,
            system_context,
            model,
        } = d;
        let deadline = Deadline::start(self.config.turn_deadline);
        let pad = self.open_scratchpad(
            &trace_id,
            &session_id,
            &model,
            &messages,
            new_from,
            pending.is_some(),
        );
        let tools = self.tools_for(&model);
        let intents = IntentCheck::for_turn(
            &self.config.intents,
            messages.get(new_from),
            &messages[..new_from.min(messages.len())],
            pending.is_some(),
            |name| tools.get(name).is_some(),
        );
        // Images the tools produce go to a model that sees them.
        let produced = super::produced::ProducedImages::new(
            self.config.images.clone().filter(|_| model.vision),
            &session_id,
        );
        let asked = messages
            .get(new_from)
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.clone());
        let mut turn = Turn {
            log: TurnTally::new(&mut messages, new_from),
            pad,
            text: String::new(),
            intents,
            system: self.system_prompt(system_context.as_deref()),
            host: &host,
            cancel: &cancel,
            deadline: &deadline,
            tx,
            model,
            tools: Arc::clone(&tools),
            partial: String::new(),
        };
        let runner = RoundRunner {
            tools: &tools,
            host: &host,
            data_dir: &self.config.data_dir,
            session_id: &session_id,
            cancel: &cancel,
            events: tx,
            produced,
            new_from,
            origin: origin.as_ref(),
            system_context: system_context.as_deref(),
            tool_timeout: self.config.tool_timeout,
            deadline: &deadline,
            resolved: std::sync::Mutex::new(resolved),
            asked,
        };
        self.rounds(&mut turn, &runner, pending).await
    }

    /// The turn's scratchpad, opened with its `init` record.
    fn open_scratchpad(
        &self,
        trace_id: &str,
        session_id: &crate::domain::SessionId,
        model: &TurnModel,
        messages: &[Message],
        new_from: usize,
        resumed: bool,
    ) -> Scratchpad {
        let turn_id = crate::domain::TurnId::new();
        let mut pad = Scratchpad::open(&self.config.data_dir, trace_id, &turn_id);
        let input = messages
            .get(new_from)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        pad.record(
            "init",
            json!({ "session": session_id, "model": model.provider.model().name, "input": input, "resumed": resumed }),
        );
        pad
    }

    /// The system prompt, with the turn's extra context below it.
    fn system_prompt(&self, system_context: Option<&str>) -> String {
        match system_context {
            Some(extra) => format!("{}\n\n{extra}", self.config.system_prompt),
            None => self.config.system_prompt.clone(),
        }
    }

    /// The turn's rounds: a model call, then its tool calls, until an answer,
    /// a pause, a stop or the round limit. A resumed turn first finishes the
    /// round it paused in.
    async fn rounds(
        &self,
        turn: &mut Turn<'_>,
        runner: &RoundRunner<'_>,
        mut pending: Option<(usize, Vec<ToolCall>)>,
    ) -> TurnOutcome {
        let mut guard = DoomLoopGuard::default();
        let first_round = pending.as_ref().map_or(1, |(round, _)| *round);
        for round in first_round..=self.config.max_tool_rounds {
            turn.log.rounds = round;
            let calls = match pending.take() {
                Some((_, calls)) => calls,
                None => match self.model_round(round, turn).await {
                    Next::Calls(calls) => calls,
                    Next::Again => continue,
                    Next::Done(outcome) => return *outcome,
                },
            };
            let output = runner
                .run(round, turn.log.messages, &calls, &mut guard, &mut turn.pad)
                .await;
            if let Some(approval) = output.paused {
                return turn.paused(round, approval);
            }
            for record in turn.host.after_tools(&calls, &output.messages).await {
                turn.pad.record("plan_outcome", record);
            }
            turn.log.messages.extend(output.messages);
            if turn.cancel.is_cancelled() {
                return turn.stopped();
            }
            if let Some(question) = asked_question(&calls) {
                return turn.asked(question);
            }
        }
        turn.out_of_rounds(self.config.max_tool_rounds)
    }

    /// The tools a turn on `model` sees (and runs): all of them, or what its
    /// chat's tool policy allows.
    fn tools_for(&self, model: &TurnModel) -> Arc<ToolRegistry> {
        match &model.tools {
            Some(policy) if !policy.is_open() => {
                Arc::new(self.tools.restricted(&|name| policy.allows(name)))
            }
            _ => Arc::clone(&self.tools),
        }
    }

    /// One model call of the turn and what the reply asks for next: tool
    /// calls, another call (the intent guard sent the answer back), or the
    /// end of the turn (an answer, a failure, the deadline).
    async fn model_round(&self, round: usize, turn: &mut Turn<'_>) -> Next {
        if turn.deadline.passed() {
            return Next::done(turn.stop_at_deadline());
        }
        let _ = turn.tx.send(RuntimeEvent::ModelStart { round }).await;
        let text_out = if turn.intents.holds_text() {
            TextOut::Hold
        } else if turn.text.is_empty() {
            TextOut::Stream
        } else {
            TextOut::AfterText
        };
        let mut reply = match self.call_sized(turn, text_out).await {
            Some(Ok(reply)) => reply,
            Some(Err(ModelFailure::Cancelled)) => return Next::done(turn.stopped()),
            Some(Err(failure)) => {
                let (text, stop) = failure.explain();
                let cause = failure.cause();
                turn.pad.record(
                    "error",
                    json!({ "round": round, "error": text, "cause": cause }),
                );
                let mut outcome = turn.finish(text, stop);
                outcome.error = cause;
                return Next::done(outcome);
            }
            None => return Next::done(turn.stop_at_deadline()),
        };
        if !reply.thinking.is_empty() {
            turn.pad.record(
                "thinking",
                json!({ "round": round, "text": reply.thinking }),
            );
        }
        turn.log.messages.push(assistant_message(&mut reply));
        let last_round = round >= self.config.max_tool_rounds;
        let mut warning = None;
        match turn.intents.after_reply(turn.log.messages, last_round) {
            Verdict::Fine => {}
            Verdict::Correct(missing) => {
                turn.pad.record(
                    "intent_correction",
                    json!({ "round": round, "missing": names(&missing), "answer": reply.text }),
                );
                turn.pad.record(
                    "retry",
                    json!({ "round": round, "reason": "intent_guard", "missing": names(&missing) }),
                );
                turn.log.intent_corrections += 1;
                return Next::Again;
            }
            Verdict::Unmet(missing) => {
                turn.pad.record(
                    "intent_unmet",
                    json!({ "round": round, "missing": names(&missing) }),
                );
                turn.log.intent_unmet = true;
                warning = Some(intent::warning(&missing));
            }
        }
        turn.add_text(
            &reply.text,
            text_out == TextOut::Hold && !reply.tool_calls.is_empty(),
        )
        .await;
        if let Some(warning) = warning {
            turn.text = format!("{warning}{}", turn.text);
        }
        if reply.tool_calls.is_empty() {
            let text = std::mem::take(&mut turn.text);
            return Next::done(turn.finish(text, StopReason::Answered));
        }
        let _ = turn
            .tx
            .send(RuntimeEvent::ToolCalls(reply.tool_calls.clone()))
            .await;
        Next::Calls(reply.tool_calls)
    }

    /// Calls the model with the conversation sized (compacted) for the window
    /// of the model the call goes to — sized anew when a fallback with a
    /// smaller window takes over. `None` when the deadline passed first.
    async fn call_sized(
        &self,
        turn: &mut Turn<'_>,
        text_out: TextOut,
    ) -> Option<Result<ModelReply, ModelFailure>> {
        let mut retries = Retries::new(self.config.model_retries);
        loop {
            let tools = turn.tools.definitions();
            turn.log.view.key_fields = turn.tools.key_fields();
            let provider = Arc::clone(&turn.model.provider);
            let context = compaction::prepare(
                provider.as_ref(),
                turn.host,
                &turn.system,
                &tools,
                turn.log.messages,
                &mut turn.log.view,
                turn.tx,
            )
            .await;
            if let Some(trace) = &context.compaction {
                turn.pad.record("compaction", trace.clone());
            }
            let mut messages = shrink_earlier_results(&context.messages);
            let with_images = match &self.config.images {
                Some(images) if turn.model.vision => images.load(&mut messages).await > 0,
                _ => {
                    crate::media::without_images(&mut messages);
                    false
                }
            };
            let request = ChatRequest {
                system: match turn.host.round_context().await {
                    Some(extra) => format!("{}\n\n{extra}", turn.system),
                    None => turn.system.clone(),
                },
                messages,
                tools,
            };
            // A stream that never ends stops at the deadline.
            let shown = &mut turn.partial;
            shown.clear();
            let called = tokio::select! {
                r = call_model(provider.as_ref(), &mut retries, context.sized_for, request, CallSink { tx: turn.tx, usage: &mut turn.log.usage, shown }, text_out) => r,
                () = turn.cancel.cancelled() => Err(ModelFailure::Cancelled),
                () = turn.deadline.reached() => return None,
            };
            // A finished call's text is the turn's now, not a partial.
            if called.is_ok() {
                turn.partial.clear();
            }
            match called {
                Ok(Called::Resize) => {}
                // An endpoint that refuses image parts (a text-only model, or
                // a server without multimodal support): text only for the
                // rest of the run, and this call again without them.
                Err(ModelFailure::Provider(ProviderError::Config { status, .. }))
                    if with_images && matches!(status, 400 | 415 | 422) =>
                {
                    if let Some(images) = &self.config.images {
                        tracing::warn!(
                            status,
                            "the model endpoint refused images; text only from now on"
                        );
                        images.disable();
                    }
                    turn.add_text(IMAGES_REFUSED, true).await;
                }
                Ok(Called::Reply(reply)) => return Some(Ok(reply)),
                Err(failure) => return Some(Err(failure)),
            }
        }
    }
}

/// The conversation's record of a model reply (its reasoning moved out).
fn assistant_message(reply: &mut ModelReply) -> Message {
    Message {
        role: Role::Assistant,
        content: reply.text.clone(),
        tool_calls: super::arguments::storable(&reply.tool_calls),
        tool_call_id: None,
        reasoning: (!reply.reasoning_content.is_empty())
            .then(|| std::mem::take(&mut reply.reasoning_content)),
        signed_reasoning: std::mem::take(&mut reply.signed_reasoning),
        images: Vec::new(),
    }
}
