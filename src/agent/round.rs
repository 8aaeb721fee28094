//! One tool round: validate calls, guard against loops, approve, then run safe
//! calls in parallel (at most 5) and the others serially, in the model's order.

use super::arguments::MAX_ARGUMENT_BYTES;
use super::deadline::Deadline;
use super::doom_loop::DoomLoopGuard;
use super::events::RuntimeEvent;
use super::produced::ProducedImages;
use super::results::keep_or_store;
use super::scratchpad::Scratchpad;
use crate::domain::{ApprovalId, Conversation, SessionId};
use crate::llm::{Message, ToolCall};
use crate::tools::{Asked, NestedResume, Resolution, TurnCheckpoint, TurnHost};
use crate::tools::{Tool, ToolRegistry};
use futures::StreamExt;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

const MAX_PARALLEL: usize = 5;

/// What the model is told when a call needs approval and nobody can be asked.
const NOBODY_TO_ASK: &str =
    "error: this action needs the user's approval and none can be requested here. \
     Use ask_user to explain what you want to do first.";

/// The call needs a decision: the turn pauses on this approval.
pub(super) struct Paused(pub(super) ApprovalId);

pub(crate) struct RoundRunner<'a> {
    pub tools: &'a ToolRegistry,
    pub host: &'a Arc<dyn TurnHost>,
    pub data_dir: &'a Path,
    pub session_id: &'a SessionId,
    pub cancel: &'a CancellationToken,
    pub events: &'a mpsc::Sender<RuntimeEvent>,
    /// Images the calls hand over, attached to their tool messages.
    pub produced: ProducedImages,
    /// Index of the turn's input in the conversation (for checkpoints).
    pub new_from: usize,
    pub origin: Option<&'a Conversation>,
    /// Carried into checkpoints, so a resumed turn sees the same system prompt.
    pub system_context: Option<&'a str>,
    /// See [`super::AgentConfig::tool_timeout`].
    pub tool_timeout: Duration,
    /// The turn's deadline: a running tool is stopped when it passes.
    pub deadline: &'a Deadline,
    /// A resumed turn's decision for the call it paused on, taken once.
    pub resolved: Mutex<Option<Resumed>>,
    /// The user's message that started the turn.
    pub asked: Option<String>,
}

/// What a resumed turn brings for the call it paused on.
pub(crate) struct Resumed {
    pub call_id: String,
    pub resolution: Resolution,
    /// The call is a delegation whose sub-agent paused: the decision is for
    /// the sub-agent's call, and the sub-agent continues from here.
    pub nested: Option<Box<TurnCheckpoint>>,
}

/// What a round produced.
pub(crate) struct RoundOutput {
    /// One tool message per call, in call order.
    pub messages: Vec<Message>,
    /// A call awaits this approval: the turn pauses (its checkpoint is stored).
    pub paused: Option<ApprovalId>,
}

/// A call checked and ready to run, or already failed.
enum Prepared {
    Ready {
        call: ToolCall,
        tool: Arc<dyn Tool>,
        args: Value,
    },
    Failed {
        call: ToolCall,
        error: String,
    },
}

impl Prepared {
    fn concurrency_safe(&self) -> bool {
        match self {
            Prepared::Ready { tool, .. } => {
                tool.spec().concurrency_safe && !tool.spec().requires_approval
            }
            Prepared::Failed { .. } => true,
        }
    }
}

/// What one call produced, before it becomes a tool message.
struct CallResult {
    call: ToolCall,
    outcome: Result<String, String>,
    duration: Duration,
    paused: Option<ApprovalId>,
}

impl RoundRunner<'_> {
    /// Runs the round's calls (`conversation` ends with the assistant message
    /// that made them) and returns one tool message per call, in order.
    pub(crate) async fn run(
        &self,
        round: usize,
        conversation: &[Message],
        calls: &[ToolCall],
        guard: &mut DoomLoopGuard,
        pad: &mut Scratchpad,
    ) -> RoundOutput {
        crate::failpoint::hit("model_answered");
        let prepared = self.prepare(round, calls, guard, pad);
        let mut messages: Vec<Message> = Vec::with_capacity(prepared.len());
        let mut pending = prepared.into_iter().enumerate().peekable();
        while let Some((index, first)) = pending.next() {
            if first.concurrency_safe() {
                let mut batch = vec![first];
                while let Some((_, next)) = pending.next_if(|(_, p)| p.concurrency_safe()) {
                    batch.push(next);
                }
                let done: Vec<CallResult> =
                    futures::stream::iter(batch.into_iter().map(|p| self.execute(p, None)))
                        .buffered(MAX_PARALLEL)
                        .collect()
                        .await;
                for r in done {
                    messages.push(self.to_message(r, pad).await);
                }
            } else {
                let checkpoint = TurnCheckpoint {
                    messages: conversation
                        .iter()
                        .chain(messages.iter())
                        .cloned()
                        .collect(),
                    new_from: self.new_from,
                    remaining: calls[index..].to_vec(),
                    round,
                    system_context: self.system_context.map(str::to_owned),
                    nested: None,
                };
                let r = self.execute(first, Some(checkpoint)).await;
                if r.paused.is_some() {
                    return RoundOutput {
                        messages,
                        paused: r.paused,
                    };
                }
                messages.push(self.to_message(r, pad).await);
            }
        }
        RoundOutput {
            messages,
            paused: None,
        }
    }

    /// The tool message for a result (large results stored), traced. Known
    /// secrets are scrubbed first (a command printing the gateway's key shows
    /// `[REDACTED]` to the model, the history, the trace and the chat), and
    /// results are data: gateway markers in them are defused.
    async fn to_message(&self, r: CallResult, pad: &mut Scratchpad) -> Message {
        {
            let content = match &r.outcome {
                Ok(text) => {
                    let text = crate::secrets::scrub(text);
                    let text = crate::markers::defuse(&text).into_owned();
                    keep_or_store(self.data_dir, self.session_id, &r.call.id, text).await
                }
                Err(e) => crate::markers::defuse(&crate::secrets::scrub(e)).into_owned(),
            };
            pad.record(
                "tool_result",
                json!({
                    "tool": r.call.name, "args": Scratchpad::args_value(&r.call.arguments),
                    "status": if r.outcome.is_ok() { "ok" } else { "error" },
                    "duration_ms": r.duration.as_millis() as u64,
                    "result": content.chars().take(4_000).collect::<String>(),
                }),
            );
            let images = self.produced.take(&r.call.id);
            let mut message = Message::tool_result(r.call.id, content);
            // A failed call's images (handed over before it failed) are not shown.
            if r.outcome.is_ok() {
                message.images = images;
            }
            message
        }
    }

    fn prepare(
        &self,
        round: usize,
        calls: &[ToolCall],
        guard: &mut DoomLoopGuard,
        pad: &mut Scratchpad,
    ) -> Vec<Prepared> {
        let mut looping = false;
        calls
            .iter()
            .map(|call| {
                let call = call.clone();
                if looping || guard.check(&call.name, &call.arguments) {
                    if !looping {
                        // The loop guard sends the model back to change approach.
                        pad.record(
                            "retry",
                            json!({ "round": round, "reason": "loop_guard", "tool": call.name }),
                        );
                    }
                    looping = true;
                    let error = format!(
                        "error: loop detected — `{}` was called with the same arguments 3 times recently; \
                         this call and the rest of this round were not run. Change approach or answer the user.",
                        call.name
                    );
                    return Prepared::Failed { call, error };
                }
                let Some(tool) = self.tools.get(&call.name) else {
                    let error = format!("error: unknown tool `{}`. Available tools: {}.", call.name, self.tools.names().join(", "));
                    return Prepared::Failed { call, error };
                };
                let raw = if call.arguments.trim().is_empty() { "{}" } else { call.arguments.as_str() };
                if raw.len() > MAX_ARGUMENT_BYTES {
                    let error = format!(
                        "error: the arguments are {} bytes; a tool call takes at most {MAX_ARGUMENT_BYTES} — split the work (e.g. write a large file in parts with append)",
                        raw.len()
                    );
                    return Prepared::Failed { call, error };
                }
                match serde_json::from_str::<Value>(raw) {
                    Ok(args @ Value::Object(_)) => Prepared::Ready { call, tool, args },
                    Ok(_) => Prepared::Failed { call, error: "error: arguments must be a JSON object".into() },
                    Err(e) => Prepared::Failed { call, error: format!("error: invalid JSON arguments ({e}); send a valid JSON object") },
                }
            })
            .collect()
    }

    /// Runs one call, traced as an `execute_tool {name}` span.
    async fn execute(&self, prepared: Prepared, checkpoint: Option<TurnCheckpoint>) -> CallResult {
        let (Prepared::Ready { call, .. } | Prepared::Failed { call, .. }) = &prepared;
        let span = crate::telemetry::tool_span(&call.name, &call.id);
        let r = self
            .run_call(prepared, checkpoint)
            .instrument(span.clone())
            .await;
        let outcome = match (&r.paused, &r.outcome) {
            (Some(_), _) => "paused",
            (None, Ok(_)) => "ok",
            (None, Err(_)) => "error",
        };
        crate::telemetry::tool_done(&span, outcome);
        r
    }

    async fn run_call(&self, prepared: Prepared, checkpoint: Option<TurnCheckpoint>) -> CallResult {
        let started = Instant::now();
        let (call, outcome) = match prepared {
            Prepared::Failed { call, error } => (call, Err(error)),
            Prepared::Ready { call, tool, args } => {
                let _ = self
                    .events
                    .send(RuntimeEvent::ToolStart {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                    })
                    .await;
                match self.approve_and_run(&call, tool, args, checkpoint).await {
                    Err(Paused(approval)) => {
                        return CallResult {
                            call,
                            outcome: Err(String::new()),
                            duration: started.elapsed(),
                            paused: Some(approval),
                        }
                    }
                    Ok(outcome) => (call, outcome),
                }
            }
        };
        let duration = started.elapsed();
        crate::failpoint::hit("tool_finished");
        let event = match &outcome {
            Ok(text) => RuntimeEvent::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                preview: text.chars().take(300).collect(),
                duration,
            },
            Err(e) => RuntimeEvent::ToolError {
                call_id: call.id.clone(),
                name: call.name.clone(),
                error: e.clone(),
                duration,
            },
        };
        let _ = self.events.send(event).await;
        CallResult {
            call,
            outcome,
            duration,
            paused: None,
        }
    }

    /// Asks for approval when the tool needs it (or applies the decision a
    /// resumed turn brings), then runs the call (or starts it in the
    /// background). `Err(Paused)` when the turn must wait for a decision.
    async fn approve_and_run(
        &self,
        call: &ToolCall,
        tool: Arc<dyn Tool>,
        mut args: Value,
        mut checkpoint: Option<TurnCheckpoint>,
    ) -> Result<Result<String, String>, Paused> {
        if let Err(e) = tool.validate_for(&args, self.origin) {
            return Ok(Err(e.for_model()));
        }
        if tool.spec().requires_approval {
            let decided = match self.take_resolution(&call.id) {
                Some(Resolution::AskAgain { arguments }) => {
                    args = arguments;
                    None
                }
                other => other,
            };
            let decided = match decided {
                Some(decided) => decided,
                None => match self.ask(call, &tool, &args, checkpoint.take()).await? {
                    Some(decided) => decided,
                    None => return Ok(Err(NOBODY_TO_ASK.into())),
                },
            };
            match decided {
                Resolution::Allowed { arguments } => args = arguments,
                Resolution::Denied { reason } => {
                    return Ok(Err(match reason {
                        Some(r) => format!("error: the user denied this action. Reason: {r}"),
                        None => "error: the user denied this action. Do not retry it; ask what they want instead.".into(),
                    }))
                }
                Resolution::Expired => {
                    return Ok(Err("error: approval expired without an answer, so the action was not run (treated as denied).".into()))
                }
                // Taken above: asking again is asking.
                Resolution::AskAgain { .. } => return Ok(Err(NOBODY_TO_ASK.into())),
            }
        }
        self.host.before_run(&call.name).await;
        if tool.runs_in_background(&args) {
            // The arguments may have been edited on the card.
            if let Err(e) = tool.validate_for(&args, self.origin) {
                return Ok(Err(e.for_model()));
            }
            return Ok(self
                .host
                .start_background(tool, call, args)
                .await
                .map(|task_id| {
                    format!(
                        "Started background task {task_id}. It runs on its own; its result will arrive as a system \
                         notification. Tell the user it has started; use check_background_tasks to see progress."
                    )
                })
                .map_err(|e| format!("error: could not start the background task: {e}")));
        }
        let resumed = self.take_nested(&call.id);
        match self.run_foreground(call, tool, args, resumed).await {
            Ok(done) => Ok(done),
            Err(Paused(approval)) => self.pause_around(approval, checkpoint).await,
        }
    }

    /// A call's sub-agent paused on `approval`: the turn pauses around it,
    /// with `checkpoint` (this round, the delegation first) stored by the host.
    async fn pause_around(
        &self,
        approval: ApprovalId,
        checkpoint: Option<TurnCheckpoint>,
    ) -> Result<Result<String, String>, Paused> {
        let kept = match checkpoint {
            Some(checkpoint) => self.host.pause_nested(&approval, checkpoint).await,
            None => {
                tracing::warn!(%approval, "a sub-agent paused where its turn cannot pause");
                false
            }
        };
        if kept {
            Err(Paused(approval))
        } else {
            Ok(Err(
                "error: the sub-agent's action needed an approval that could not be kept, so it was not run."
                    .into(),
            ))
        }
    }

    /// The decision a resumed turn brought for `call_id`, once.
    fn take_resolution(&self, call_id: &str) -> Option<Resolution> {
        let mut slot = self.resolved.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some(r) if r.call_id == call_id && r.nested.is_none() => {
                slot.take().map(|r| r.resolution)
            }
            _ => None,
        }
    }

    /// The paused sub-agent a resumed turn brought for delegation `call_id`,
    /// with the decision for its call, once.
    fn take_nested(&self, call_id: &str) -> Option<NestedResume> {
        let mut slot = self.resolved.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some(r) if r.call_id == call_id && r.nested.is_some() => {
                let r = slot.take()?;
                Some(NestedResume {
                    checkpoint: *r.nested?,
                    resolution: r.resolution,
                })
            }
            _ => None,
        }
    }

    /// Asks the host for a decision on `call` with `args`: allowed by a rule,
    /// nobody to ask (`None`), or the turn pauses (`Err`).
    async fn ask(
        &self,
        call: &ToolCall,
        tool: &Arc<dyn Tool>,
        args: &Value,
        checkpoint: Option<TurnCheckpoint>,
    ) -> Result<Option<Resolution>, Paused> {
        let summary = tool.approval_summary_for(args, self.origin).await;
        let mut checkpoint = checkpoint.unwrap_or_else(|| TurnCheckpoint {
            messages: Vec::new(),
            new_from: 0,
            remaining: vec![call.clone()],
            round: 0,
            system_context: None,
            nested: None,
        });
        // The stored call carries exactly the arguments on the card (after edits).
        if let Some(first) = checkpoint.remaining.first_mut() {
            first.arguments = args.to_string();
        }
        match self
            .host
            .request_approval(tool.spec(), call, args, summary, checkpoint)
            .await
        {
            Asked::Allowed => Ok(Some(Resolution::Allowed {
                arguments: args.clone(),
            })),
            Asked::Paused(approval) => Err(Paused(approval)),
            Asked::Unavailable => Ok(None),
        }
    }
}
