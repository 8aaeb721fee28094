//! Processing one session input — a command, a user message, a task
//! notification: run the turn, stream the answer to the originating chat,
//! persist the exchange (or, paused, show its card). Resuming a paused turn
//! is in `resume`; which of the two a session's input starts, in `runner`.

use crate::agent::TurnRequest;
use crate::domain::{Conversation, SessionId, SessionKey};
use crate::gateway::commands;
use crate::gateway::delivery::origin::Origin;
use crate::gateway::delivery::outbound::notify;
use crate::gateway::session::input::SessionInput;
use crate::gateway::text;
use crate::gateway::turn::deliver::deliver;
use crate::gateway::turn::host::GatewayHost;
use crate::gateway::turn::prompt as turn_prompt;
use crate::gateway::Inner;
use crate::llm::Message;
use crate::models::Selected;
use crate::store::TurnContext;
use crate::tasks::{notification_text, scheduled_text};
use std::sync::Arc;
use switchboard_platform::Activity;
use tokio_util::sync::CancellationToken;

/// Runs `input` in `session` (the session of `key`, looked up by the worker).
pub(crate) async fn process(
    inner: &Arc<Inner>,
    key: SessionKey,
    session: SessionId,
    input: SessionInput,
    cancel: CancellationToken,
) {
    let Some(origin) = origin_of(inner, &input, session) else {
        return;
    };
    let Some(given) = model_input(inner, &origin, &input).await else {
        // A command, answered.
        return inner.turn_settled(&key).await;
    };
    if let Some(notice) = crate::gateway::turn::budget::refusal(inner, &key).await {
        inner.turn_settled(&key).await;
        let (chat, reply_to) = (origin.conversation.chat, origin.conversation.reply_to);
        return notify(origin.adapter.as_ref(), &chat, &notice, reply_to).await;
    }
    let selected = select(inner, &origin, &input, &given).await;
    let _ = origin
        .adapter
        .activity(&origin.conversation.chat, Activity::Typing)
        .await;
    let prompt = turn_prompt::assemble(inner, &key, &origin, &input, given).await;
    let context = TurnContext {
        plain_input: prompt.memory.plain_input.clone(),
        history_ids: prompt.memory.history_ids.clone(),
        consent: prompt.consent,
        model: selected.route.map(|_| selected.name.clone()),
        ..TurnContext::default()
    };
    let host = GatewayHost::new(inner, &origin, context);
    let events = inner.agent.run_turn(TurnRequest {
        session_id: origin.session.clone(),
        origin: Some(origin.conversation.clone()),
        history: prompt.history,
        input: prompt.input,
        host: Arc::clone(&host) as _,
        cancel,
        system_context: prompt.system_context,
        model: Some(selected.model.clone()),
    });
    if deliver(inner, &origin, &selected, &host, events, prompt.memory).await {
        inner.turn_settled(&key).await;
    }
}

/// Who a turn of `input` answers, where, and through which adapter; `None`
/// when the chat's platform has no adapter in this process.
fn origin_of(inner: &Inner, input: &SessionInput, session: SessionId) -> Option<Origin> {
    let conversation = match input {
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
        return None;
    };
    let sent_at = match input {
        SessionInput::Message(m) => Some(m.timestamp),
        _ => None,
    };
    Some(Origin {
        chat: inner.chat_settings(&conversation.key),
        conversation,
        adapter,
        session,
        sent_at,
    })
}

/// The model and tools of the turn: the chat's binding (the turn's copy,
/// read once in `origin_of`) and the routing
/// rules, without the tools that change tools unless the asker may; the
/// tools added from the chat refreshed as every process sees them now.
async fn select(inner: &Inner, origin: &Origin, input: &SessionInput, given: &Message) -> Selected {
    let route = crate::models::RouteInput {
        text: query_text(input),
        images: !given.images.is_empty(),
    };
    let chat = origin.chat.as_ref();
    let mut selected =
        crate::gateway::chat::select_in(inner, chat, &origin.session, Some(route)).await;
    let asker = match input {
        SessionInput::Message(m) => Some(&m.user),
        _ => None,
    };
    crate::gateway::chat::for_builders(inner, &mut selected, asker);
    if let Err(e) = inner.features.grown.refresh().await {
        tracing::warn!(error = %e, "could not load the tools added from the chat");
    }
    selected
}

/// The user's own words of `input` (routing looks at them); none for a
/// notification or a schedule's prompt.
fn query_text(input: &SessionInput) -> &str {
    match input {
        SessionInput::Message(m) => m.text.as_str(),
        _ => "",
    }
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
        if let Some(skill) = inner.features.skills.book().get(&cmd.name) {
            let input = text::user_text(commands::input_after_name(&m.text));
            return Some(Message::user(skill.invocation(&input)));
        }
    }
    if let Some(asked) = crate::gateway::commands::tools::invocation(inner, &cmd, &m.text, &m.user)
    {
        return Some(Message::user(asked));
    }
    if let Some(asked) = crate::gateway::commands::skills::invocation(inner, &cmd, &m.text, &m.user)
    {
        return Some(Message::user(asked));
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
/// [`crate::gateway::turn::attachments`]), and whether it answers a pending `ask_user`
/// question (then it is the answer, never a new request). `None` when
/// nothing is left for the model.
async fn user_message(
    inner: &Inner,
    o: &Origin,
    m: &switchboard_platform::InboundMessage,
) -> Option<Message> {
    let (said, images) = crate::gateway::turn::attachments::user_said(inner, o, m).await?;
    let mut message = match inner
        .store
        .turns()
        .take_waiting_question(&o.conversation.key)
        .await
    {
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
