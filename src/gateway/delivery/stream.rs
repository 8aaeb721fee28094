//! A running turn's events into the chat's draft: the streamed text, and per
//! the session's verbosity the tool activity (calls, sub-agents' steps,
//! compaction, a fallback model, reasoning) above it — all through the draft's throttled
//! updates (edits, or native drafts), never a message of its own.

use crate::agent::{RuntimeEvent, TurnOutcome};
use crate::gateway::delivery::activity::{Activity, Verbosity};
use crate::gateway::delivery::origin::Origin;
use crate::gateway::delivery::outbound::ReplyStream;
use crate::gateway::Inner;
use tokio::sync::mpsc;

/// What a turn's stream left: its outcome (`None` when it ended without
/// one) and its activity, for the line above the answer.
pub(in crate::gateway) struct Streamed {
    pub(in crate::gateway) outcome: Option<TurnOutcome>,
    pub(in crate::gateway) activity: Activity,
}

/// Passes a turn's events to the chat as they come; the outcome at the end.
pub(in crate::gateway) async fn stream(
    inner: &Inner,
    reply: &mut ReplyStream,
    events: &mut mpsc::Receiver<RuntimeEvent>,
    o: &Origin,
    selected: &crate::models::Selected,
    verbosity: Verbosity,
) -> Streamed {
    let mut draft = Draft {
        inner,
        o,
        selected,
        verbosity,
        tools: inner.agent.tools(),
        outcome: None,
        activity: Activity::default(),
    };
    if let Some(route) = selected.route {
        draft.activity.routed(&selected.name, route.reason());
        if verbosity != Verbosity::Off {
            reply.set_head(draft.activity.draft(verbosity)).await;
        }
    }
    let mut timing = ModelTiming::default();
    let model = selected.model.provider.model().name.clone();
    while let Some(event) = events.recv().await {
        timing.see(inner, &model, &event);
        let changed = draft.take(event, reply).await;
        if changed && verbosity != Verbosity::Off {
            reply.set_head(draft.activity.draft(verbosity)).await;
        }
    }
    Streamed {
        outcome: draft.outcome,
        activity: draft.activity,
    }
}

/// A turn's stream so far: its activity (the lines above the answer) and,
/// at the end, its outcome.
struct Draft<'a> {
    inner: &'a Inner,
    o: &'a Origin,
    selected: &'a crate::models::Selected,
    verbosity: Verbosity,
    tools: &'a std::sync::Arc<crate::tools::ToolRegistry>,
    outcome: Option<TurnOutcome>,
    activity: Activity,
}

impl Draft<'_> {
    /// A tool's name as the chat shows it.
    fn label(&self, name: &str) -> String {
        self.tools
            .get(name)
            .map_or_else(|| name.to_owned(), |t| t.spec().display_name.clone())
    }

    /// Takes one event: the text into the draft, the rest into the
    /// activity. Whether the activity lines changed.
    async fn take(&mut self, event: RuntimeEvent, reply: &mut ReplyStream) -> bool {
        match event {
            RuntimeEvent::TextDelta(t) => {
                reply.push(&t).await;
                // The answer's text is in the chat for good: from now on a
                // crash does not run the turn again. (A native draft is
                // not: it vanishes with the process, so the turn may run
                // again and answer once.)
                if reply.posted() {
                    self.inner.answer_visible(&self.o.conversation.key).await;
                }
                false
            }
            RuntimeEvent::ToolProgress {
                call_id,
                name,
                progress,
            } => {
                if self.verbosity == Verbosity::Off {
                    reply.set_status(progress.line()).await;
                }
                let label = self.label(&name);
                self.activity.step(&call_id, &label, &progress.line());
                true
            }
            event => self.note(event),
        }
    }

    /// An event that only changes the activity (or ends the turn).
    fn note(&mut self, event: RuntimeEvent) -> bool {
        match event {
            RuntimeEvent::ToolCalls(calls) => {
                for call in &calls {
                    let label = self.label(&call.name);
                    self.activity.planned(&call.id, &label, &call.arguments);
                }
                false
            }
            RuntimeEvent::ToolStart { call_id, name } => {
                let label = self.label(&name);
                self.activity.started(&call_id, &label);
                true
            }
            RuntimeEvent::ToolResult {
                call_id,
                name,
                duration,
                ..
            } => {
                let label = self.label(&name);
                self.activity.finished(&call_id, &label, true, duration);
                true
            }
            RuntimeEvent::ToolError {
                call_id,
                name,
                duration,
                ..
            } => {
                let label = self.label(&name);
                self.activity.finished(&call_id, &label, false, duration);
                true
            }
            RuntimeEvent::ThinkingDelta(t) => {
                self.activity.reasoned(&t);
                self.verbosity == Verbosity::Full
            }
            RuntimeEvent::Compaction {
                messages_before,
                messages_after,
                tokens_before,
                tokens_after,
            } => {
                tracing::info!(session = %self.o.session, messages_before, messages_after, tokens_before, tokens_after, "context compacted");
                self.activity.compacted(tokens_before, tokens_after);
                true
            }
            RuntimeEvent::Done(done) => {
                self.outcome = Some(done);
                // The fallback may have taken over inside the last call.
                self.switched();
                false
            }
            // A fallback serves (a failed call was passed on, now or in an
            // earlier turn while the primary cools down): say which.
            RuntimeEvent::ModelStart { .. } | RuntimeEvent::Retry { .. } => self.switched(),
            RuntimeEvent::Usage(_)
            | RuntimeEvent::TextDelta(_)
            | RuntimeEvent::ToolProgress { .. } => false,
        }
    }

    /// Notes a fallback model serving instead of the selected one; whether
    /// one does.
    fn switched(&mut self) -> bool {
        let serving = &self.selected.model.provider.model().name;
        let switched = *serving != self.selected.name;
        if switched {
            self.activity.switched(serving);
        }
        switched
    }
}

/// The model calls' latency, read off the turn's events: a call starts at
/// `ModelStart`, its first token is the first text, reasoning or tool call
/// after it, and it ends with its tool calls or the turn.
#[derive(Default)]
struct ModelTiming {
    call: Option<(std::time::Instant, bool)>,
}

impl ModelTiming {
    fn see(&mut self, inner: &Inner, model: &str, event: &RuntimeEvent) {
        use crate::metrics::Latency;
        let labels = [("model", model)];
        match event {
            RuntimeEvent::ModelStart { .. } => {
                self.call = Some((std::time::Instant::now(), false));
            }
            RuntimeEvent::TextDelta(_)
            | RuntimeEvent::ThinkingDelta(_)
            | RuntimeEvent::ToolCalls(_)
            | RuntimeEvent::Done(_) => {
                if let Some((at, first)) = &mut self.call {
                    if !*first {
                        *first = true;
                        inner
                            .metrics
                            .observe(Latency::FirstToken, &labels, at.elapsed());
                    }
                }
                if matches!(event, RuntimeEvent::ToolCalls(_) | RuntimeEvent::Done(_)) {
                    if let Some((at, _)) = self.call.take() {
                        inner
                            .metrics
                            .observe(Latency::ModelCall, &labels, at.elapsed());
                    }
                }
            }
            RuntimeEvent::ToolResult { name, duration, .. } => inner.metrics.observe(
                Latency::Tool,
                &[("tool", name), ("outcome", "ok")],
                *duration,
            ),
            RuntimeEvent::ToolError { name, duration, .. } => inner.metrics.observe(
                Latency::Tool,
                &[("tool", name), ("outcome", "error")],
                *duration,
            ),
            _ => {}
        }
    }
}
