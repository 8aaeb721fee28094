//! Processing one session input — a command, a user message, a task
//! notification or a resumed turn: run the turn, stream the answer to the
//! originating chat, persist the exchange.

use super::commands;
use super::exchange;
use super::host::{GatewayHost, Predecided};
use super::memory;
use super::outbound::{send_text, ReplyStream};
use super::session::{Awaiting, SessionInput};
use super::text;
use super::Inner;
use crate::agent::{ApprovalOutcome, ResumeRequest, RuntimeEvent, StopReason, TurnRequest};
use crate::approvals::{decision_of, Decision};
use crate::llm::Message;
use crate::store::{SessionId, SessionKey, TurnContext, TurnOrigin, TurnState};
use crate::tasks::{notification_text, scheduled_text};
use std::sync::{Arc, Mutex};
use switchboard_platform::{Activity, ChatAddress, ChatKind, MessageId, PlatformAdapter, User};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// How many live (not compacted) past messages a turn loads at most: twice
/// the count at which the context is compacted anyway, so compaction — not
/// this limit — decides what leaves the context.
const HISTORY_LIMIT: u32 = 2 * crate::agent::MAX_CONTEXT_MESSAGES as u32;

/// Who a turn answers, and where.
struct Origin {
    key: SessionKey,
    chat: ChatAddress,
    kind: ChatKind,
    user: User,
    reply_to: Option<MessageId>,
    adapter: Arc<dyn PlatformAdapter>,
    session: SessionId,
}

impl Origin {
    fn turn_origin(&self) -> TurnOrigin {
        TurnOrigin {
            key: self.key,
            chat: self.chat,
            kind: self.kind,
            user: self.user.clone(),
            reply_to: self.reply_to,
        }
    }
}

/// Runs `input` in `session` (the session of `key`, looked up by the worker).
pub(crate) async fn process(
    inner: &Arc<Inner>,
    key: SessionKey,
    session: SessionId,
    awaiting: &Awaiting,
    input: SessionInput,
    cancel: CancellationToken,
) {
    let (chat, kind, user, reply_to) = match &input {
        SessionInput::Message(m) => (m.chat, m.chat_kind, m.user.clone(), Some(m.message_id)),
        SessionInput::Notification(f) => {
            (f.origin.chat, f.origin.kind, f.origin.user.clone(), None)
        }
        SessionInput::Scheduled { origin, .. } => {
            (origin.chat, origin.kind, origin.user.clone(), None)
        }
    };
    let Some(adapter) = inner.adapter(chat.platform) else {
        tracing::warn!(platform = %chat.platform, "no adapter for this platform");
        return;
    };
    let model_input = match &input {
        SessionInput::Message(m) => {
            let cmd = commands::parse(&m.text);
            let skills = inner.skills.book();
            let skill = cmd
                .as_ref()
                .filter(|cmd| !commands::is_builtin(&cmd.name))
                .and_then(|cmd| skills.get(&cmd.name));
            if let Some(skill) = skill {
                let input = text::user_text(commands::input_after_name(&m.text));
                Message::user(skill.invocation(&input))
            } else if let Some(cmd) = cmd {
                let reply = commands::run(
                    inner,
                    &cmd,
                    &key,
                    &session,
                    &user,
                    m.chat_kind.is_private(),
                )
                .await
                .unwrap_or_else(|e| {
                    tracing::error!(error = %e, command = %cmd.name, "command failed");
                    "⚠️ That command failed because storage is unavailable. Please try again."
                        .into()
                });
                notify(adapter.as_ref(), &chat, &reply, reply_to).await;
                return;
            } else {
                user_message(inner, &key, m).await
            }
        }
        SessionInput::Notification(f) => Message::user(notification_text(f)),
        SessionInput::Scheduled { prompt, .. } => Message::user(scheduled_text(prompt)),
    };
    let origin = Origin {
        key,
        chat,
        kind,
        user,
        reply_to,
        adapter,
        session,
    };
    let _ = origin.adapter.activity(&chat, Activity::Typing).await;
    let state = memory::session_state(inner, &origin.session).await;
    let (history, ids) = memory::load_history(
        inner,
        &origin.session,
        state.summary.as_deref(),
        HISTORY_LIMIT,
    )
    .await;
    // Only the model sees recalled memories; history keeps the plain input.
    let query = match &input {
        SessionInput::Message(m) => Some(m.text.as_str()),
        _ => None,
    };
    let private = origin.kind.is_private();
    let (wrapped, system_context) =
        memory::prepare(inner, &key, private, &state, &model_input.content, query).await;
    let turn_memory = memory::TurnMemory {
        plain_input: Some(model_input.content),
        history_ids: Some(ids),
        state: Some(state),
    };
    let context = TurnContext {
        plain_input: turn_memory.plain_input.clone(),
        history_ids: turn_memory.history_ids.clone(),
        ..TurnContext::default()
    };
    let host = host(inner, &origin, awaiting, None, context);
    let events = inner.agent.run_turn(TurnRequest {
        session_id: origin.session.0.clone(),
        origin: Some(origin.turn_origin()),
        history,
        input: Message::user(wrapped),
        host,
        cancel,
        system_context,
    });
    deliver(inner, &origin, events, turn_memory).await;
}

/// What the model is told the user said: the text, a note on attachments, and
/// whether it answers a pending `ask_user` question (then it is the answer,
/// never a new request).
async fn user_message(
    inner: &Inner,
    key: &SessionKey,
    m: &switchboard_platform::InboundMessage,
) -> Message {
    let mut said = text::user_text(&m.text);
    if let Some(note) = text::attachments_note(&m.attachments) {
        said = format!("{said}\n{note}");
    }
    match inner.store.take_waiting_question(key).await {
        Ok(Some(q)) => Message::user(format!(
            "(This answers your earlier question: «{}»)\n{said}",
            q.replace('»', "\"")
        )),
        Ok(None) => Message::user(said),
        Err(e) => {
            tracing::warn!(error = %e, "could not read the session's waiting state");
            Message::user(said)
        }
    }
}

/// Resumes a turn paused on `approval_id` if nobody else has: claims its row,
/// applies the recorded decision to the waiting call and continues the turn,
/// answering in the original chat. Runs in the session's worker (queued by
/// [`super::queue_resume`]), so it never overlaps another turn of the session.
pub(crate) async fn resume(
    inner: &Arc<Inner>,
    awaiting: &Awaiting,
    approval_id: &str,
    edit: Option<oneshot::Receiver<String>>,
    cancel: CancellationToken,
) {
    let decision = match inner.store.approval(approval_id).await {
        Ok(Some(record)) => decision_of(&record),
        Ok(None) => Decision::Expired,
        Err(e) => {
            return tracing::error!(error = %e, "could not read the approval of a paused turn")
        }
    };
    // An edit leaves the row in place until the new arguments arrive (whoever
    // receives them claims it); every other decision is claimed now.
    let state = if decision == Decision::Edit {
        inner.store.paused_turn(approval_id).await
    } else {
        inner.store.claim_turn_state(approval_id).await
    };
    let state = match state {
        Ok(Some(state)) => state,
        Ok(None) => return,
        Err(e) => return tracing::error!(error = %e, "could not take a paused turn"),
    };
    let TurnState {
        session_id,
        origin,
        messages,
        new_from,
        remaining,
        context,
        ..
    } = state;
    let Some(adapter) = inner.adapter(origin.chat.platform) else {
        return tracing::warn!(platform = %origin.chat.platform, "paused turn for a platform without adapter");
    };
    let Some(first) = remaining.first() else {
        return;
    };
    let outcome = match decision {
        Decision::Allow | Decision::Always => match serde_json::from_str(&first.arguments) {
            Ok(arguments) => Predecided::Outcome(ApprovalOutcome::Allowed { arguments }),
            Err(_) => Predecided::Outcome(ApprovalOutcome::Denied {
                reason: Some("stored arguments unreadable".into()),
            }),
        },
        Decision::Deny(reason) => Predecided::Outcome(ApprovalOutcome::Denied { reason }),
        Decision::Expired => Predecided::Outcome(ApprovalOutcome::Expired),
        Decision::Edit => Predecided::Edit {
            approval_id: approval_id.to_owned(),
            text: edit,
        },
    };
    tracing::info!(approval = approval_id, "resuming a paused turn");
    let origin = Origin {
        key: origin.key,
        chat: origin.chat,
        kind: origin.kind,
        user: origin.user,
        reply_to: origin.reply_to,
        adapter,
        session: SessionId(session_id),
    };
    let turn_memory = memory::TurnMemory {
        plain_input: context.plain_input.clone(),
        history_ids: context.history_ids.clone(),
        state: None,
    };
    let (round, system_context) = (context.round, context.system_context.clone());
    let predecided = Some((first.id.clone(), outcome));
    let host = host(inner, &origin, awaiting, predecided, context);
    let _ = origin
        .adapter
        .activity(&origin.chat, Activity::Typing)
        .await;
    let events = inner.agent.resume_turn(ResumeRequest {
        session_id: origin.session.0.clone(),
        origin: Some(origin.turn_origin()),
        messages,
        new_from,
        remaining,
        round,
        system_context,
        host,
        cancel,
    });
    deliver(inner, &origin, events, turn_memory).await;
}

fn host(
    inner: &Arc<Inner>,
    o: &Origin,
    awaiting: &Awaiting,
    predecided: Option<(String, Predecided)>,
    context: TurnContext,
) -> Arc<GatewayHost> {
    Arc::new(GatewayHost {
        inner: Arc::clone(inner),
        key: o.key,
        session_id: o.session.0.clone(),
        chat: o.chat,
        kind: o.kind,
        user: o.user.clone(),
        adapter: Arc::clone(&o.adapter),
        awaiting: Arc::clone(awaiting),
        reply_to: o.reply_to,
        predecided: Mutex::new(predecided),
        context,
    })
}

/// Streams a turn's events into the chat, then persists and posts the outcome.
async fn deliver(
    inner: &Arc<Inner>,
    o: &Origin,
    mut events: mpsc::Receiver<RuntimeEvent>,
    turn_memory: memory::TurnMemory,
) {
    let mut reply = ReplyStream::new(Arc::clone(&o.adapter), o.chat, o.reply_to);
    let mut outcome = None;
    while let Some(event) = events.recv().await {
        match event {
            RuntimeEvent::TextDelta(t) => reply.push(&t).await,
            RuntimeEvent::ToolProgress { progress, .. } => {
                reply.set_status(progress.line()).await;
            }
            RuntimeEvent::Done(done) => outcome = Some(done),
            RuntimeEvent::Compaction {
                messages_before,
                messages_after,
            } => {
                tracing::info!(session = %o.session, messages_before, messages_after, "context compacted");
            }
            _ => {}
        }
    }
    let Some(mut outcome) = outcome else {
        tracing::error!("turn ended without an outcome");
        let _ = o.adapter.activity(&o.chat, Activity::Idle).await;
        return;
    };
    inner.metrics.inc(
        "switchboard_turns_total",
        &[
            ("platform", o.chat.platform.as_str()),
            ("stop", outcome.stop.as_str()),
        ],
    );
    if outcome.intent_corrections > 0 && outcome.stop == StopReason::Answered {
        let result = if outcome.intent_unmet {
            "unmet"
        } else {
            "corrected"
        };
        inner.metrics.inc(
            "switchboard_intent_checks_total",
            &[("platform", o.chat.platform.as_str()), ("outcome", result)],
        );
    }
    if outcome.stop == StopReason::Handover {
        // Another process (or the next start) resumes this turn and answers it.
        reply.abandon().await;
        let _ = o.adapter.activity(&o.chat, Activity::Idle).await;
        return;
    }
    let mut final_text = outcome.text.clone();
    if outcome.stop == StopReason::ModelError {
        let cause = outcome.error.as_deref();
        audit_error_with(inner, o, "error.model", &outcome.text, cause).await;
        final_text = super::model_error::shown_text(o.chat.platform, &final_text, cause);
    }
    memory::restore_input(&mut outcome, &turn_memory);
    // Held, not dropped, when storage fails: saved once it is back (below,
    // after the answer is delivered), or by the next start.
    let held =
        exchange::save_or_hold(inner, o.chat.platform, &o.session, &outcome.new_messages).await;
    match &held {
        None => memory::after_turn(inner, &o.session, &turn_memory, &outcome).await,
        Some(held) if !held.restart_proof() => {
            final_text.push_str("\n\n_(I couldn't save this exchange yet; I may not remember it if I restart before my storage is back.)_");
        }
        Some(_) => {}
    }
    if outcome.stop == StopReason::WaitingForUser {
        let question = outcome.new_messages.last().map(|m| m.content.as_str());
        if let Err(e) = inner.store.set_waiting_question(&o.key, question).await {
            tracing::warn!(error = %e, "could not mark the session as waiting for an answer");
        }
    }
    if let Err(e) = inner
        .store
        .add_usage(o.key.platform, o.key.user, &outcome.usage, 1)
        .await
    {
        tracing::warn!(error = %e, "could not record usage");
    }
    let question = outcome
        .new_messages
        .first()
        .map(|m| m.content.as_str())
        .unwrap_or_default();
    let buttons = memory::answer_buttons(
        inner,
        &o.key,
        &o.session,
        o.adapter.as_ref(),
        question,
        &outcome,
    )
    .await;
    reply.set_final_buttons(buttons);
    if let Err(e) = reply.finish(&final_text).await {
        tracing::error!(error = %e, "could not deliver the answer");
        audit_error(inner, o, "error.delivery", &e.to_string()).await;
    }
    let _ = o.adapter.activity(&o.chat, Activity::Idle).await;
    // The session's next input waits until this exchange is in its history.
    if let Some(held) = held {
        let reason = format!("saved late: {}", held.reason());
        if held.save_when_back(inner).await {
            audit_error(inner, o, "error.storage", &reason).await;
            memory::after_turn(inner, &o.session, &turn_memory, &outcome).await;
        }
    }
}

/// Records a failed turn in the audit log (`switchboard events`). `message` is
/// already safe to show: the user-facing text, or an error scrubbed of secrets.
async fn audit_error(inner: &Inner, o: &Origin, kind: &str, message: &str) {
    audit_error_with(inner, o, kind, message, None).await;
}

/// [`audit_error`] with the underlying `cause` (scrubbed), kept whole enough
/// to tell a wrong URL from a down server.
async fn audit_error_with(
    inner: &Inner,
    o: &Origin,
    kind: &str,
    message: &str,
    cause: Option<&str>,
) {
    let mut detail = serde_json::json!({
        "platform": o.key.platform.as_str(),
        "chat": o.chat.chat.0,
        "user": o.user.id.0,
        "session": o.session.0,
        "message": crate::text::clip(message, 300),
    });
    if let Some(cause) = cause {
        detail["cause"] = serde_json::Value::from(crate::text::clip(cause, 1000));
    }
    inner.store.record_event(kind, detail).await;
}

/// Sends a complete text and marks the chat idle.
pub(crate) async fn notify(
    adapter: &dyn PlatformAdapter,
    chat: &ChatAddress,
    text: &str,
    reply_to: Option<MessageId>,
) {
    if let Err(e) = send_text(adapter, chat, text, reply_to).await {
        tracing::warn!(error = %e, "could not send a reply");
    }
    let _ = adapter.activity(chat, Activity::Answered).await;
}
