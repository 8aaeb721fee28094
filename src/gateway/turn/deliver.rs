//! Delivering a turn: its events streamed into the chat, then the outcome
//! persisted and posted — or, for a paused turn, its card shown — and what
//! failed recorded in the audit log.

use crate::agent::{RuntimeEvent, StopReason, TurnOutcome};
use crate::gateway::delivery::activity::{self, Verbosity};
use crate::gateway::delivery::origin::Origin;
use crate::gateway::delivery::outbound::ReplyStream;
use crate::gateway::delivery::reactions;
use crate::gateway::delivery::stream as turn_stream;
use crate::gateway::turn::exchange;
use crate::gateway::turn::host::GatewayHost;
use crate::gateway::turn::memory;
use crate::gateway::turn::reasoning;
use crate::gateway::Inner;
use std::sync::Arc;
use switchboard_platform::{Activity, Status};
use tokio::sync::mpsc;

/// Streams a turn's events into the chat, then persists and posts the
/// outcome. `true` when the turn is settled — answered, or paused with its
/// card out — so a gateway stopping now must not redo it; `false` when it was
/// cut short.
pub(in crate::gateway) async fn deliver(
    inner: &Arc<Inner>,
    o: &Origin,
    selected: &crate::models::Selected,
    host: &GatewayHost,
    mut events: mpsc::Receiver<RuntimeEvent>,
    turn_memory: memory::TurnMemory,
) -> bool {
    let mut reply = ReplyStream::new(
        Arc::clone(&o.adapter),
        o.conversation.chat,
        o.conversation.reply_to,
    );
    // The operator's own console shows its spinner instead of activity lines.
    let verbosity = if o.adapter.capabilities().local_operator {
        Verbosity::Off
    } else {
        crate::gateway::commands::verbose::verbosity_in(inner, o.chat.as_ref(), &o.session).await
    };
    let status = &inner.features.status;
    status.show(&o.adapter, status_target(o), Status::Working);
    let started = std::time::Instant::now();
    let streamed =
        turn_stream::stream(inner, &mut reply, &mut events, o, selected, verbosity).await;
    let Some(mut outcome) = streamed.outcome else {
        tracing::error!("turn ended without an outcome");
        status.show(&o.adapter, status_target(o), Status::Failed);
        let _ = o
            .adapter
            .activity(&o.conversation.chat, Activity::Idle)
            .await;
        return false;
    };
    // The model that served last (a fallback, when the one asked failed).
    let served = selected.model.provider.model().name.clone();
    crate::gateway::turn::usage::count(inner, o, &served, &outcome, started.elapsed());
    if outcome.stop == StopReason::Paused {
        inner.answer_visible(&o.conversation.key).await;
        pause(inner, o, &served, host, reply, &outcome).await;
        return true;
    }
    let mut final_text = outcome.text.clone();
    if outcome.stop == StopReason::ModelError {
        let cause = outcome.error.as_deref();
        audit_error_with(inner, o, "error.model", &outcome.text, cause).await;
        final_text = crate::gateway::delivery::model_error::shown_text(
            o.adapter.capabilities().local_operator,
            &final_text,
            cause,
        );
    }
    memory::restore_input(&mut outcome, &turn_memory);
    let held = save_exchange(inner, o, &turn_memory, &outcome).await;
    if held.as_ref().is_some_and(|held| !held.restart_proof()) {
        final_text.push_str("\n\n_(I couldn't save this exchange yet; I may not remember it if I restart before my storage is back.)_");
    }
    crate::gateway::turn::usage::record(inner, o, &served, &outcome, 1).await;
    let head = streamed.activity.head(verbosity);
    let show_all = match streamed.activity.clipped_reasoning() {
        Some(whole) if verbosity == Verbosity::Full => {
            let (chat, user) = (&o.conversation.chat, o.conversation.user.id);
            reasoning::show_all_button(inner, o.adapter.as_ref(), chat, user, whole).await
        }
        _ => Vec::new(),
    };
    inner.answer_visible(&o.conversation.key).await;
    answer(inner, o, reply, &outcome, &head, final_text, show_all).await;
    crate::gateway::turn::profile_card::offer(inner, o).await;
    // The session's next input waits until this exchange is in its history.
    if let Some(held) = held {
        let reason = format!("saved late: {}", held.reason());
        if held.save_when_back(inner).await {
            audit_late_save(inner, o, &reason).await;
            memory::after_turn(inner, &o.session, &turn_memory, &outcome).await;
        }
    }
    outcome.stop != StopReason::Cancelled
}

/// Saves the turn's new messages into the session's history — held, not
/// dropped, when storage fails: saved once it is back (after the answer is
/// delivered), or by the next start — lets memory learn from a saved
/// exchange, and marks a session whose turn asked the user a question.
async fn save_exchange(
    inner: &Arc<Inner>,
    o: &Origin,
    turn_memory: &memory::TurnMemory,
    outcome: &TurnOutcome,
) -> Option<exchange::HeldExchange> {
    let held = exchange::save_or_hold(
        inner,
        o.conversation.chat.platform,
        &o.session,
        &outcome.new_messages,
    )
    .await;
    if held.is_none() {
        memory::after_turn(inner, &o.session, turn_memory, outcome).await;
    }
    crate::gateway::turn::planner::after_turn(inner, &o.session, outcome).await;
    if outcome.stop == StopReason::WaitingForUser {
        let question = outcome.new_messages.last().map(|m| m.content.as_str());
        if let Err(e) = inner
            .store
            .turns()
            .set_waiting_question(&o.conversation.key, question)
            .await
        {
            tracing::warn!(error = %e, "could not mark the session as waiting for an answer");
        }
    }
    held
}

/// Posts the final answer — the activity `head` above it, the answer's
/// buttons under it (👍/👎, then `show_all`: the 💭 row) — in place of the
/// streamed draft, and ends the typing indicator.
async fn answer(
    inner: &Arc<Inner>,
    o: &Origin,
    mut reply: ReplyStream,
    outcome: &TurnOutcome,
    head: &str,
    mut final_text: String,
    show_all: Vec<Vec<switchboard_platform::Button>>,
) {
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
        outcome,
    )
    .await;
    let buttons_sent: Vec<Vec<switchboard_platform::Button>> =
        buttons.into_iter().chain(show_all).collect();
    reply.set_final_buttons(buttons_sent.clone());
    if !head.is_empty() {
        let answer = if final_text.trim().is_empty() {
            "(no answer)"
        } else {
            final_text.as_str()
        };
        final_text = activity::above(head, answer);
    }
    let first_byte = reply.first_byte();
    let rated = reactions::rated_in(&buttons_sent);
    let mut shown = reactions::final_status(&outcome.stop);
    let delivered = match reply.finish(&final_text).await {
        Ok(sent) => {
            crate::gateway::turn::usage::delivered(inner, o, first_byte);
            reactions::note_rated_message(inner, rated, sent.last()).await;
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "could not deliver the answer");
            audit_error(inner, o, "error.delivery", &e.to_string()).await;
            shown = Some(Status::Failed);
            false
        }
    };
    if let Some(shown) = shown {
        inner
            .features
            .status
            .show(&o.adapter, status_target(o), shown);
    }
    // Spoken after the text and its status: nothing waits on the audio.
    if delivered {
        crate::gateway::delivery::voice::after_answer(inner, o, outcome).await;
    }
    let _ = o
        .adapter
        .activity(&o.conversation.chat, Activity::Idle)
        .await;
}

/// A turn paused on an approval: what it said so far is settled in the chat
/// (the rest of the answer follows in a new message once it resumes), its
/// usage counted, and then the card shown — the session is free for its next
/// input at once. A card that cannot be shown is denied, and the turn resumes
/// with that.
async fn pause(
    inner: &Arc<Inner>,
    o: &Origin,
    served: &str,
    host: &GatewayHost,
    reply: ReplyStream,
    outcome: &TurnOutcome,
) {
    reply.settle().await;
    crate::gateway::turn::usage::record(inner, o, served, outcome, 0).await;
    match host.take_paused() {
        Some(record) => {
            if let Err(e) = inner.approvals.show(o.adapter.as_ref(), &record).await {
                tracing::warn!(error = %e, "approval card not shown; the call is denied");
                crate::gateway::session::queue::queue_resume(inner, record.id).await;
            }
        }
        None => tracing::error!("a turn paused without an approval to show"),
    }
    let _ = o
        .adapter
        .activity(&o.conversation.chat, Activity::Paused)
        .await;
}

/// The user's message a turn answers, where its status reaction goes.
fn status_target(o: &Origin) -> Option<switchboard_platform::MessageRef> {
    let chat = o.conversation.chat;
    o.conversation
        .reply_to
        .map(|id| switchboard_platform::MessageRef { chat, id })
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
    let written =
        crate::gateway::session::hold::until_stored(inner, "auditing a late save", || {
            store.audit().try_record("error.storage", &detail)
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
        .audit()
        .record(kind, error_detail(o, message, cause))
        .await;
}

/// What an audit entry of a failed turn says: where, who, and why.
fn error_detail(o: &Origin, message: &str, cause: Option<&str>) -> serde_json::Value {
    let mut detail = serde_json::json!({
        "platform": o.conversation.key.platform.as_str(),
        "chat": o.conversation.chat.chat.0,
        "user": o.conversation.user.id.0,
        "session": o.session.as_str(),
        "message": crate::text::clip(message, 300),
    });
    if let Some(cause) = cause {
        detail["cause"] = serde_json::Value::from(crate::text::clip(cause, 1000));
    }
    detail
}
