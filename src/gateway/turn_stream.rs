//! A running turn's events into the chat's draft: the streamed text, and per
//! the session's verbosity the tool activity (calls, sub-agents' steps,
//! compaction, reasoning) above it — all through the draft's throttled
//! edits, never a message of its own.

use super::activity::{Activity, Verbosity};
use super::outbound::ReplyStream;
use super::turn::Origin;
use crate::agent::{RuntimeEvent, TurnOutcome};
use crate::tools::ToolRegistry;
use tokio::sync::mpsc;

/// What a turn's stream left: its outcome (`None` when it ended without
/// one) and its activity, for the line above the answer.
pub(super) struct Streamed {
    pub(super) outcome: Option<TurnOutcome>,
    pub(super) activity: Activity,
}

/// Passes a turn's events to the chat as they come; the outcome at the end.
pub(super) async fn stream(
    reply: &mut ReplyStream,
    events: &mut mpsc::Receiver<RuntimeEvent>,
    o: &Origin,
    tools: &ToolRegistry,
    verbosity: Verbosity,
) -> Streamed {
    let label = |name: &str| {
        tools
            .get(name)
            .map_or_else(|| name.to_owned(), |t| t.spec().display_name.clone())
    };
    let mut outcome = None;
    let mut activity = Activity::default();
    while let Some(event) = events.recv().await {
        let changed = match event {
            RuntimeEvent::TextDelta(t) => {
                reply.push(&t).await;
                false
            }
            RuntimeEvent::ToolProgress {
                call_id,
                name,
                progress,
            } => {
                if verbosity == Verbosity::Off {
                    reply.set_status(progress.line()).await;
                }
                activity.step(&call_id, &label(&name), &progress.line());
                true
            }
            RuntimeEvent::ToolCalls(calls) => {
                for call in &calls {
                    activity.planned(&call.id, &label(&call.name), &call.arguments);
                }
                false
            }
            RuntimeEvent::ToolStart { call_id, name } => {
                activity.started(&call_id, &label(&name));
                true
            }
            RuntimeEvent::ToolResult {
                call_id,
                name,
                duration,
                ..
            } => {
                activity.finished(&call_id, &label(&name), true, duration);
                true
            }
            RuntimeEvent::ToolError {
                call_id,
                name,
                duration,
                ..
            } => {
                activity.finished(&call_id, &label(&name), false, duration);
                true
            }
            RuntimeEvent::ThinkingDelta(t) => {
                activity.reasoned(&t);
                verbosity == Verbosity::Full
            }
            RuntimeEvent::Compaction {
                messages_before,
                messages_after,
                tokens_before,
                tokens_after,
            } => {
                tracing::info!(session = %o.session, messages_before, messages_after, tokens_before, tokens_after, "context compacted");
                activity.compacted(tokens_before, tokens_after);
                true
            }
            RuntimeEvent::Done(done) => {
                outcome = Some(done);
                false
            }
            RuntimeEvent::ModelStart { .. }
            | RuntimeEvent::Retry { .. }
            | RuntimeEvent::Usage(_) => false,
        };
        if changed && verbosity != Verbosity::Off {
            reply.set_head(activity.draft(verbosity)).await;
        }
    }
    Streamed { outcome, activity }
}
