//! A choice in a `/model` or `/queue` menu: admitted like the typed command
//! (the same access check; the message limit was drawn by the caller),
//! acknowledged at once (applying it reads and writes storage), applied to
//! the chooser's session (`commands::choices`), and answered with the
//! outcome — in place of the menu for the one it was shown to, privately
//! for anyone else.

use crate::gateway::commands::choices::{apply, parse_action};
use crate::gateway::intake::access::Access;
use crate::gateway::Inner;
use std::sync::Arc;
use switchboard_platform::{
    Addressed, ButtonPress, InboundMessage, MessageId, OutgoingMessage, PlatformAdapter,
    PressAnswer,
};

/// A choice in a `/model` or `/queue` menu: admitted like the typed command,
/// acknowledged at once (applying it reads and writes storage), applied to
/// the chooser's session, and answered with the outcome.
pub(in crate::gateway) async fn on_press(
    inner: &Arc<Inner>,
    adapter: &Arc<dyn PlatformAdapter>,
    press: &ButtonPress,
) {
    let Some((which, shown_to)) = parse_action(&press.action) else {
        return;
    };
    let answer = match (
        admitted(inner, adapter.as_ref(), press).await,
        press.input.chosen(),
    ) {
        (Err(answer), _) => answer,
        (Ok(()), None) => PressAnswer::Private("Choose one of the options.".into()),
        (Ok(()), Some(value)) => {
            if let Err(e) = adapter.defer_press(press).await {
                tracing::debug!(error = %e, "could not defer a menu choice");
            }
            let outcome = apply(inner, press, which, value).await.unwrap_or_else(|e| {
                tracing::error!(error = %e, "a menu choice failed");
                "⚠️ That failed because storage is unavailable. Please try again.".into()
            });
            if press.user.id == shown_to {
                PressAnswer::Update(OutgoingMessage::text(outcome))
            } else {
                PressAnswer::Private(outcome)
            }
        }
    };
    if let Err(e) = adapter.answer_press(press, answer).await {
        tracing::warn!(error = %e, "could not answer a menu choice");
    }
}

/// The access check a typed command passes, for the chooser; `Err` is the
/// answer when they are not admitted (silent where a message would be
/// ignored).
async fn admitted(
    inner: &Inner,
    adapter: &dyn PlatformAdapter,
    press: &ButtonPress,
) -> Result<(), PressAnswer> {
    let typed = InboundMessage {
        chat: press.chat,
        chat_kind: press.chat_kind,
        user: press.user.clone(),
        message_id: press.message.map_or(MessageId(0), |m| m.id),
        text: String::new(),
        reply_to: None,
        addressed: Addressed::Command,
        attachments: Vec::new(),
        timestamp: press.timestamp,
        parent: press.parent,
    };
    let checked = inner
        .gate
        .access
        .check(
            &inner.store,
            &typed,
            adapter.capabilities().local_operator,
            inner.durability.storage.is_down(),
        )
        .await;
    match checked {
        Ok(Access::Admit) => Ok(()),
        Ok(Access::Refuse(text)) => Err(PressAnswer::Private(text)),
        Ok(Access::Ignore) => Err(PressAnswer::Ack),
        Err(e) => {
            tracing::error!(error = %e, "access check failed");
            Err(PressAnswer::Private(
                "⚠️ I can't check access right now (storage unavailable).".into(),
            ))
        }
    }
}
