//! Processing one session input — a command, a user message, a task
//! notification: run the turn, stream the answer to the originating chat,
//! persist the exchange (or, paused, show its card). Resuming a paused turn
//! is in `resume`.

use super::activity::{self, Verbosity};
use super::commands;
use super::exchange;
use super::host::GatewayHost;
use super::memory;
use super::outbound::{send_text, ReplyStream};
use super::session::SessionInput;
use super::text;
use super::turn_stream;
use super::Inner;
use crate::agent::{RuntimeEvent, StopReason, TurnOutcome, TurnRequest};
use crate::domain::{Conversation, SessionId, SessionKey};
use crate::llm::Message;
use crate::store::TurnContext;
use crate::tasks::{notification_text, scheduled_text};
use std::sync::{Arc, Mutex};
use switchboard_platform::{Activity, ChatAddress, MessageId, PlatformAdapter};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many live (not compacted) past messages a turn loads at most: twice
/// the count at which the context is compacted anyway, so compaction — not
/// this limit — decides what leaves the context.
const HISTORY_LIMIT: u32 = 2 * crate::agent::MAX_CONTEXT_MESSAGES as u32;

/// Who a turn answers, where, and through which adapter and session.
pub(super) struct Origin {
    pub(super) conversation: Conversation,
    pub(super) adapter: Arc<dyn PlatformAdapter>,
    pub(super) session: SessionId,
}

/// Runs `input` in `session` (the session of `key`, looked up by the worker).
pub(crate) async fn process(
    inner: &Arc<Inner>,
    key: SessionKey,
    session: SessionId,
    input: SessionInput,
    cancel: CancellationToken,
) {
    // A turn paused on an approval sent back for editing takes the
    // requester's next message in this session as the new arguments.
    if let SessionInput::Message(m) = &input {
        match inner.store.awaited_edit(&session.0).await {
            Ok(Some(approval_id)) => {
                return super::resume::resume_with(
                    inner,
                    &approval_id,
                    super::resume::Next::Edit(m.text.clone()),
                    cancel,
                )
                .await
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not look for an awaited edit"),
        }
    }
    let conversation = match &input {
        SessionInput::Message(m) => {
            Conversation::new(m.chat, m.chat_kind, m.user.clone(), Some(m.message_id))
        }
        // A notification or a schedule's turn replies to no message.
        SessionInput::Notification(f) => Conversation {
            reply_to: None,
            ..f.origin.conversation.clone()
        },
        SessionInput::Scheduled { origin, .. } => Conversation {
            reply_to: None,
            ..origin.clone()
        },
    };
    let Some(adapter) = inner.adapter(conversation.chat.platform) else {
        tracing::warn!(platform = %conversation.chat.platform, "no adapter for this platform");
        return;
    };
    let origin = Origin {
        conversation,
        adapter,
        session,
    };
    let Some(model_input) = model_input(inner, &origin, &input).await else {
        return;
    };
    let _ = origin
        .adapter
        .activity(&origin.conversation.chat, Activity::Typing)
        .await;
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
    let private = origin.conversation.kind.is_private();
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
    let host = host(inner, &origin, context);
    let mut input = Message::user(wrapped);
    input.images = model_input.images;
    let events = inner.agent.run_turn(TurnRequest {
        session_id: origin.session.0.clone(),
        origin: Some(origin.conversation.clone()),
        history,
        input,
        host: Arc::clone(&host) as _,
        cancel,
        system_context,
    });
    deliver(inner, &origin, &host, events, turn_memory).await;
}

/// What the model is given for `input`: a skill's invocation, the user's
/// message, a task's notification or a schedule's prompt. `None` when the
/// input was a command, answered here.
async fn model_input(inner: &Inner, o: &Origin, input: &SessionInput) -> Option<Message> {
    let m = match input {
        SessionInput::Message(m) => m,
        SessionInput::Notification(f) => return Some(Message::user(notification_text(f))),
        SessionInput::Scheduled { prompt, .. } => {
            return Some(Message::user(scheduled_text(prompt)))
        }
    };
    let key = &o.conversation.key;
    let Some(cmd) = commands::parse(&m.text) else {
        return user_message(inner, o, m).await;
    };
    if cmd.builtin.is_none() {
        if let Some(skill) = inner.skills.book().get(&cmd.name) {
            let input = text::user_text(commands::input_after_name(&m.text));
            return Some(Message::user(skill.invocation(&input)));
        }
    }
    let private = m.chat_kind.is_private();
    let reply = commands::run(inner, &cmd, key, &o.session, &m.user, private)
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, command = %cmd.name, "command failed");
            "⚠️ That command failed because storage is unavailable. Please try again.".into()
        });
    notify(
        o.adapter.as_ref(),
        &o.conversation.chat,
        &reply,
        Some(m.message_id),
    )
    .await;
    None
}

/// What the model is told the user said: the text, its files (see
/// [`super::attachments`]), and whether it answers a pending `ask_user`
/// question (then it is the answer, never a new request). `None` when
/// nothing is left for the model.
async fn user_message(
    inner: &Inner,
    o: &Origin,
    m: &switchboard_platform::InboundMessage,
) -> Option<Message> {
    let (said, images) = super::attachments::user_said(inner, o, m).await?;
    let mut message = match inner.store.take_waiting_question(&o.conversation.key).await {
        Ok(Some(q)) => Message::user(format!(
            "(This answers your earlier question: «{}»)\n{said}",
            q.replace('»', "\"")
        )),
        Ok(None) => Message::user(said),
        Err(e) => {
            tracing::warn!(error = %e, "could not read the session's waiting state");
            Message::user(said)
        }
    };
    message.images = images;
    Some(message)
}

pub(super) fn host(inner: &Arc<Inner>, o: &Origin, context: TurnContext) -> Arc<GatewayHost> {
    Arc::new(GatewayHost {
        inner: Arc::clone(inner),
        session_id: o.session.0.clone(),
        conversation: o.conversation.clone(),
        adapter: Arc::clone(&o.adapter),
        context,
        paused: Mutex::new(None),
    })
}

/// Streams a turn's events into the chat, then persists and posts the outcome.
pub(super) async fn deliver(
    inner: &Arc<Inner>,
    o: &Origin,
    host: &GatewayHost,
    mut events: mpsc::Receiver<RuntimeEvent>,
    turn_memory: memory::TurnMemory,
) {
    let mut reply = ReplyStream::new(
        Arc::clone(&o.adapter),
        o.conversation.chat,
        o.conversation.reply_to,
    );
    // The operator's own console shows its spinner instead of activity lines.
    let verbosity = if o.adapter.capabilities().local_operator {
        Verbosity::Off
    } else {
        super::verbose_cmd::verbosity(inner, &o.session).await
    };
    let streamed = turn_stream::stream(inner, &mut reply, &mut events, o, verbosity).await;
    let Some(mut outcome) = streamed.outcome else {
        tracing::error!("turn ended without an outcome");
        let _ = o
            .adapter
            .activity(&o.conversation.chat, Activity::Idle)
            .await;
        return;
    };
    count(inner, o, &outcome);
    if outcome.stop == StopReason::Paused {
        return pause(inner, o, host, reply, &outcome).await;
    }
    let mut final_text = outcome.text.clone();
    if outcome.stop == StopReason::ModelError {
        let cause = outcome.error.as_deref();
        audit_error_with(inner, o, "error.model", &outcome.text, cause).await;
        final_text = super::model_error::shown_text(
            o.adapter.capabilities().local_operator,
            &final_text,
            cause,
        );
    }
    memory::restore_input(&mut outcome, &turn_memory);
    // Held, not dropped, when storage fails: saved once it is back (below,
    // after the answer is delivered), or by the next start.
    let held = exchange::save_or_hold(
        inner,
        o.conversation.chat.platform,
        &o.session,
        &outcome.new_messages,
    )
    .await;
    match &held {
        None => memory::after_turn(inner, &o.session, &turn_memory, &outcome).await,
        Some(held) if !held.restart_proof() => {
            final_text.push_str("\n\n_(I couldn't save this exchange yet; I may not remember it if I restart before my storage is back.)_");
        }
        Some(_) => {}
    }
    if outcome.stop == StopReason::WaitingForUser {
        let question = outcome.new_messages.last().map(|m| m.content.as_str());
        if let Err(e) = inner
            .store
            .set_waiting_question(&o.conversation.key, question)
            .await
        {
            tracing::warn!(error = %e, "could not mark the session as waiting for an answer");
        }
    }
    record_usage(inner, o, &outcome, 1).await;
    let question = outcome
        .new_messages
        .first()
        .map(|m| m.content.as_str())
        .unwrap_or_default();
    let buttons = memory::answer_buttons(
        inner,
        &o.conversation.key,
        &o.session,
        o.adapter.as_ref(),
        question,
        &outcome,
    )
    .await;
    reply.set_final_buttons(buttons);
    let head = streamed.activity.head(verbosity);
    if !head.is_empty() {
        let answer = if final_text.trim().is_empty() {
            "(no answer)"
        } else {
            final_text.as_str()
        };
        final_text = activity::above(&head, answer);
    }
    if let Err(e) = reply.finish(&final_text).await {
        tracing::error!(error = %e, "could not deliver the answer");
        audit_error(inner, o, "error.delivery", &e.to_string()).await;
    }
    let _ = o
        .adapter
        .activity(&o.conversation.chat, Activity::Idle)
        .await;
    // The session's next input waits until this exchange is in its history.
    if let Some(held) = held {
        let reason = format!("saved late: {}", held.reason());
        if held.save_when_back(inner).await {
            audit_late_save(inner, o, &reason).await;
            memory::after_turn(inner, &o.session, &turn_memory, &outcome).await;
        }
    }
}

/// Counts the turn for `/metrics`: by platform and how it stopped, and the
/// intent guard's checks.
fn count(inner: &Inner, o: &Origin, outcome: &TurnOutcome) {
    let platform = o.conversation.chat.platform.as_str();
    inner.metrics.inc(
        "switchboard_turns_total",
        &[("platform", platform), ("stop", outcome.stop.as_str())],
    );
    if outcome.intent_corrections > 0 && outcome.stop == StopReason::Answered {
        let result = if outcome.intent_unmet {
            "unmet"
        } else {
            "corrected"
        };
        inner.metrics.inc(
            "switchboard_intent_checks_total",
            &[("platform", platform), ("outcome", result)],
        );
    }
}

/// Adds the turn's tokens (and `turns`: 1 for a finished turn, 0 for a pause,
/// which is counted once it finishes) to the user's usage.
async fn record_usage(inner: &Inner, o: &Origin, outcome: &TurnOutcome, turns: u32) {
    let key = &o.conversation.key;
    if let Err(e) = inner
        .store
        .add_usage(key.platform, key.user, &outcome.usage, turns)
        .await
    {
        tracing::warn!(error = %e, "could not record usage");
    }
}

/// A turn paused on an approval: what it said so far is settled in the chat
/// (the rest of the answer follows in a new message once it resumes), its
/// usage counted, and then the card shown — the session is free for its next
/// input at once. A card that cannot be shown is denied, and the turn resumes
/// with that.
async fn pause(
    inner: &Arc<Inner>,
    o: &Origin,
    host: &GatewayHost,
    reply: ReplyStream,
    outcome: &TurnOutcome,
) {
    reply.settle().await;
    record_usage(inner, o, outcome, 0).await;
    match host.take_paused() {
        Some(record) => {
            if let Err(e) = inner.approvals.show(o.adapter.as_ref(), &record).await {
                tracing::warn!(error = %e, "approval card not shown; the call is denied");
                super::queue_resume(inner, record.id).await;
            }
        }
        None => tracing::error!("a turn paused without an approval to show"),
    }
    let _ = o
        .adapter
        .activity(&o.conversation.chat, Activity::Paused)
        .await;
}

/// Records a failed turn in the audit log (`switchboard events`). `message` is
/// already safe to show: the user-facing text, or an error scrubbed of secrets.
async fn audit_error(inner: &Inner, o: &Origin, kind: &str, message: &str) {
    audit_error_with(inner, o, kind, message, None).await;
}

/// The audit entry of an exchange saved late: written even if the database
/// that just came back is still busy (retried like the save itself), so the
/// operator learns of every outage that held an answer.
async fn audit_late_save(inner: &Inner, o: &Origin, reason: &str) {
    let detail = error_detail(o, reason, None);
    let store = &inner.store;
    let written = super::hold::until_stored(inner, "auditing a late save", || {
        store.try_record_event("error.storage", &detail)
    })
    .await;
    if written.is_none() {
        tracing::warn!("stopping before the late save was audited");
    }
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
    inner
        .store
        .record_event(kind, error_detail(o, message, cause))
        .await;
}

/// What an audit entry of a failed turn says: where, who, and why.
fn error_detail(o: &Origin, message: &str, cause: Option<&str>) -> serde_json::Value {
    let mut detail = serde_json::json!({
        "platform": o.conversation.key.platform.as_str(),
        "chat": o.conversation.chat.chat.0,
        "user": o.conversation.user.id.0,
        "session": o.session.0,
        "message": crate::text::clip(message, 300),
    });
    if let Some(cause) = cause {
        detail["cause"] = serde_json::Value::from(crate::text::clip(cause, 1000));
    }
    detail
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
