//! Processing one session input: a command, a user message or a task
//! notification — run the turn, stream the answer, persist the exchange.

use super::commands;
use super::host::GatewayHost;
use super::outbound::{send_text, ReplyStream};
use super::session::{Awaiting, SessionInput};
use super::text;
use super::Inner;
use crate::agent::{RuntimeEvent, TurnRequest};
use crate::llm::{Message, Role};
use crate::store::{SessionId, SessionKey};
use crate::tasks::notification_text;
use std::sync::Arc;
use switchboard_platform::{Activity, ChatAddress, MessageId, PlatformAdapter, User};

/// How many past messages a turn sees (compaction comes with memory management).
const HISTORY_LIMIT: u32 = 80;

pub(crate) async fn process(inner: &Arc<Inner>, key: SessionKey, awaiting: &Awaiting, input: SessionInput) {
    let (chat, user, reply_to, model_input, raw_text) = match &input {
        SessionInput::Message(m) => (m.chat, m.user.clone(), Some(m.message_id), Message::user(text::user_text(&m.text)), Some(m.text.as_str())),
        SessionInput::Notification(f) => (f.origin.chat, f.origin.user.clone(), None, Message::user(notification_text(f)), None),
    };
    let Some(adapter) = inner.adapter(chat.platform) else {
        tracing::warn!(platform = %chat.platform, "no adapter for this platform");
        return;
    };
    let session = match inner.store.session(&key).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "session lookup failed");
            notify(adapter.as_ref(), &chat, "⚠️ My storage is unavailable right now, so I can't answer. Please try again shortly.", reply_to).await;
            return;
        }
    };
    if let Some(cmd) = raw_text.and_then(commands::parse) {
        let reply = commands::run(inner, &cmd, &key, &session, &user).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, command = %cmd.name, "command failed");
            "⚠️ That command failed because storage is unavailable. Please try again.".into()
        });
        notify(adapter.as_ref(), &chat, &reply, reply_to).await;
        return;
    }
    run_turn(inner, key, awaiting, adapter, chat, user, reply_to, session, model_input).await;
}

#[allow(clippy::too_many_arguments)]
async fn run_turn(
    inner: &Arc<Inner>,
    key: SessionKey,
    awaiting: &Awaiting,
    adapter: Arc<dyn PlatformAdapter>,
    chat: ChatAddress,
    user: User,
    reply_to: Option<MessageId>,
    session: SessionId,
    input: Message,
) {
    let _ = adapter.activity(&chat, Activity::Typing).await;
    let history = match inner.store.history(&session, HISTORY_LIMIT).await {
        Ok(h) => aligned(h),
        Err(e) => {
            tracing::error!(error = %e, "history unavailable; answering without it");
            Vec::new()
        }
    };
    let host = Arc::new(GatewayHost {
        inner: Arc::clone(inner),
        key,
        session_id: session.0.clone(),
        chat,
        user: user.clone(),
        adapter: Arc::clone(&adapter),
        awaiting: Arc::clone(awaiting),
    });
    let mut events = inner.agent.run_turn(TurnRequest {
        session_id: session.0.clone(),
        history,
        input,
        host,
        cancel: inner.shutdown.child_token(),
    });
    let mut reply = ReplyStream::new(Arc::clone(&adapter), chat, reply_to);
    let mut outcome = None;
    while let Some(event) = events.recv().await {
        match event {
            RuntimeEvent::TextDelta(t) => reply.push(&t).await,
            RuntimeEvent::Done(o) => outcome = Some(o),
            _ => {}
        }
    }
    let Some(outcome) = outcome else {
        tracing::error!("turn ended without an outcome");
        let _ = adapter.activity(&chat, Activity::Idle).await;
        return;
    };
    let mut final_text = outcome.text.clone();
    if let Err(e) = inner.store.append_messages(&session, &outcome.new_messages).await {
        tracing::error!(error = %e, "could not save the conversation");
        final_text.push_str("\n\n_(I couldn't save this exchange; I may not remember it.)_");
    }
    if let Err(e) = inner.store.add_usage(key.platform, key.user, &outcome.usage).await {
        tracing::warn!(error = %e, "could not record usage");
    }
    if let Err(e) = reply.finish(&final_text).await {
        tracing::error!(error = %e, "could not deliver the answer");
    }
    let _ = adapter.activity(&chat, Activity::Idle).await;
}

/// History that starts at a user message (never with an orphan tool result).
fn aligned(mut history: Vec<Message>) -> Vec<Message> {
    let start = history.iter().position(|m| m.role == Role::User).unwrap_or(history.len());
    history.drain(..start);
    history
}

/// Sends a complete text and marks the chat idle.
pub(crate) async fn notify(adapter: &dyn PlatformAdapter, chat: &ChatAddress, text: &str, reply_to: Option<MessageId>) {
    if let Err(e) = send_text(adapter, chat, text, reply_to).await {
        tracing::warn!(error = %e, "could not send a reply");
    }
    let _ = adapter.activity(chat, Activity::Idle).await;
}
