//! Resuming a paused turn — the one path every decision takes: claim its
//! row, apply the decision (or the requester's edit) to the call it paused on,
//! and continue it, answering in the original chat.

use crate::agent::{Resolution, ResumeRequest};
use crate::approvals::{check_edit, decision_of, edited_arguments, Decision};
use crate::domain::ApprovalId;
use crate::gateway::delivery::origin::Origin;
use crate::gateway::turn::deliver::deliver;
use crate::gateway::turn::host::GatewayHost;
use crate::gateway::turn::memory;
use crate::gateway::Inner;
use crate::llm::ToolCall;
use crate::models::Selected;
use crate::store::{TurnContext, TurnState};
use serde_json::Value;
use std::sync::Arc;
use switchboard_platform::{Activity, OutgoingMessage};
use tokio_util::sync::CancellationToken;

/// How often one call may be sent back for editing before it is denied.
const MAX_EDITS: u32 = 3;

/// Resumes the turn paused on `approval_id` if nobody else has: claims its
/// row, applies the recorded decision to the waiting call and continues the
/// turn, answering in the original chat. A decision of
/// [`Decision::EditedTo`] brings the new arguments of an approval sent back
/// by its card's form (one sent back without them keeps waiting for the
/// requester's next message). Runs in the session's worker, so it never
/// overlaps another turn of the session.
pub(crate) async fn resume(
    inner: &Arc<Inner>,
    approval_id: &ApprovalId,
    decided: Option<Decision>,
    cancel: CancellationToken,
) {
    let next = match decided {
        // New arguments from the card's form: as if the requester typed them.
        Some(Decision::EditedTo(arguments)) => Next::Edit(arguments),
        Some(decision) => Next::Decided(decision),
        None => Next::Read,
    };
    resume_with(inner, approval_id, next, cancel).await;
}

/// What a resumption brings for the call its turn paused on.
pub(in crate::gateway) enum Next {
    /// The decision, passed along by whoever took it (final).
    Decided(Decision),
    /// Read it from the approval (the sweeper, a restart).
    Read,
    /// The requester's message for an approval sent back for editing.
    Edit(String),
}

pub(in crate::gateway) async fn resume_with(
    inner: &Arc<Inner>,
    approval_id: &ApprovalId,
    next: Next,
    cancel: CancellationToken,
) {
    let Some((state, decision, edit)) = claim(inner, approval_id, next).await else {
        return;
    };
    // The call the approval is for: the turn's own, or its sub-agent's.
    let Some(first) = state.awaiting().cloned() else {
        return;
    };
    let TurnState {
        session_id,
        origin,
        messages,
        new_from,
        remaining,
        mut context,
        ..
    } = state;
    let Some(adapter) = inner.adapter(origin.chat.platform) else {
        return tracing::warn!(platform = %origin.chat.platform, "paused turn for a platform without adapter");
    };
    let nested = context.nested.take().map(|n| {
        Box::new(crate::agent::TurnCheckpoint {
            messages: n.messages,
            new_from: n.new_from,
            remaining: n.remaining,
            round: n.round,
            system_context: n.system_context,
            nested: None,
        })
    });
    let origin = Origin {
        chat: inner.chat_settings(&origin.key),
        conversation: origin,
        adapter,
        session: session_id,
        sent_at: None,
    };
    let edit = edit.map(|text| (text, inner.agent.tools().get(&first.name)));
    let resolution = resolve(decision, &first, &mut context, &origin, edit).await;
    tracing::info!(approval = %approval_id, "resuming a paused turn");
    let allowed = matches!(resolution, Resolution::Allowed { .. });
    inner
        .resume_started(approval_id, &origin.conversation, &first.name, allowed)
        .await;
    let turn_memory = memory::TurnMemory {
        plain_input: context.plain_input.clone(),
        history_ids: context.history_ids.clone(),
        state: None,
    };
    let (round, system_context) = (context.round, context.system_context.clone());
    let selected = resumed_model(inner, &origin, context.model.as_deref()).await;
    let host = GatewayHost::new(inner, &origin, context);
    let _ = origin
        .adapter
        .activity(&origin.conversation.chat, Activity::Typing)
        .await;
    let events = inner.agent.resume_turn(ResumeRequest {
        session_id: origin.session.clone(),
        origin: Some(origin.conversation.clone()),
        messages,
        new_from,
        remaining,
        round,
        system_context,
        resolution,
        nested,
        host: Arc::clone(&host) as _,
        cancel,
        model: Some(selected.model.clone()),
    });
    let settled = deliver(inner, &origin, &selected, &host, events, turn_memory).await;
    inner.resume_ended(approval_id, settled).await;
}

/// Claims the paused turn of `approval_id` for this process and reads its
/// decision (and the requester's edit); `None` when another process has
/// it, nothing is paused there, or the gateway is stopping.
async fn claim(
    inner: &Arc<Inner>,
    approval_id: &ApprovalId,
    next: Next,
) -> Option<(TurnState, Decision, Option<String>)> {
    let store = &inner.store;
    // A decided approval must not be lost to an outage: the claim waits for
    // storage (the row stays for the next process if the gateway stops
    // first). Without the requester's text, an approval sent back for
    // editing leaves its row alone.
    let editing = matches!(next, Next::Edit(_));
    let claimed = crate::gateway::session::hold::until_stored(
        inner,
        "claiming a paused turn",
        || async move {
            if editing {
                store.turns().claim(approval_id).await
            } else {
                store.turns().claim_decided(approval_id).await
            }
        },
    )
    .await;
    let state = claimed.flatten()?;
    match next {
        Next::Decided(decision) => Some((state, decision, None)),
        // Read after the claim: an edit nobody sent may have expired meanwhile.
        Next::Read | Next::Edit(_) => {
            let record = crate::gateway::session::hold::until_stored(
                inner,
                "reading a decided approval",
                || store.approvals().get(approval_id),
            )
            .await;
            let decision = match record {
                Some(Some(record)) => decision_of(&record),
                Some(None) => Decision::Expired,
                // Stopping: the claimed turn is not run (at most once).
                None => return None,
            };
            let edit = match next {
                Next::Edit(text) => Some(text),
                _ => None,
            };
            Some((state, decision, edit))
        }
    }
}

/// What the paused call gets: its arguments (allowed), a refusal, an
/// expiry, or — sent back for editing — a new card with the edited ones
/// (at most [`MAX_EDITS`] times).
async fn resolve(
    decision: Decision,
    call: &ToolCall,
    context: &mut TurnContext,
    origin: &Origin,
    edit: Option<(String, Option<Arc<dyn crate::tools::Tool>>)>,
) -> Resolution {
    match decision {
        Decision::Allow | Decision::Always => match serde_json::from_str(&call.arguments) {
            Ok(arguments) => Resolution::Allowed { arguments },
            Err(_) => Resolution::Denied {
                reason: Some("stored arguments unreadable".into()),
            },
        },
        Decision::Deny(reason) => Resolution::Denied { reason },
        Decision::Expired => Resolution::Expired,
        Decision::Edit | Decision::EditedTo(_) if context.edits >= MAX_EDITS => {
            Resolution::Denied {
                reason: Some("too many edits".into()),
            }
        }
        Decision::Edit | Decision::EditedTo(_) => {
            context.edits += 1;
            let (text, tool) = edit.unwrap_or_default();
            let edit = Edit {
                text,
                tool: tool.as_deref(),
            };
            edited(origin, call, &edit).await
        }
    }
}

/// The requester's edit of a call sent back: its text (typed, or the
/// arguments a form sent as JSON) and the call's tool, whose checks it
/// must pass.
struct Edit<'a> {
    text: String,
    tool: Option<&'a dyn crate::tools::Tool>,
}

/// The model a resumed turn runs on: the session's, unless a routing rule
/// gave the turn to another (then that one, falling back to the session's
/// as its first call would have).
async fn resumed_model(inner: &Inner, origin: &Origin, routed: Option<&str>) -> Selected {
    let mut selected =
        crate::gateway::chat::select_in(inner, origin.chat.as_ref(), &origin.session, None).await;
    crate::gateway::chat::for_builders(inner, &mut selected, Some(&origin.conversation.user));
    if let Some(name) = routed {
        if let Some(routed) = inner.features.models.named(name).await {
            selected.model = crate::agent::TurnModel {
                provider: Arc::new(crate::llm::FallbackProvider::new(
                    routed.provider,
                    vec![Arc::clone(&selected.model.provider)],
                )),
                vision: routed.vision,
                tools: selected.model.tools.clone(),
            };
            name.clone_into(&mut selected.name);
        }
    }
    selected
}

/// The new arguments `edit` gives the call sent back for editing: a new card
/// is asked for with them, or — when they are unusable or fail the tool's
/// schema and checks (the checks a form's arguments passed already) — with
/// the old ones again, after saying so.
async fn edited(o: &Origin, call: &ToolCall, edit: &Edit<'_>) -> Resolution {
    let old: Value =
        serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::Object(Default::default()));
    let why = match edited_arguments(&old, &edit.text) {
        Some(arguments) => match check_edit(edit.tool, &arguments, Some(&o.conversation)) {
            Ok(()) => return Resolution::AskAgain { arguments },
            Err(why) => format!("I couldn't use those arguments ({why})"),
        },
        None => "I couldn't use that as new arguments".to_owned(),
    };
    let notice = format!(
        "{why}; {}. The card is open again.",
        crate::approvals::edit_prompt(&old.to_string())
    );
    if let Err(e) = o
        .adapter
        .send(&o.conversation.chat, OutgoingMessage::text(notice))
        .await
    {
        tracing::warn!(error = %e, "could not send a notice");
    }
    Resolution::AskAgain { arguments: old }
}
