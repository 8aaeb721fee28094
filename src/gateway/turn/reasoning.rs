//! The 💭 button under an answer whose reasoning quote (`/verbose full`) was
//! clipped: the whole reasoning kept for its asker, and read page by page —
//! each page a message within the platform's length limit, with a button to
//! the next one. Only the asker, in the chat the answer was given in, reads it.

use crate::gateway::delivery::activity::escape;
use crate::gateway::Inner;
use crate::store::ReasoningNote;
use chrono::Utc;
use switchboard_platform::{
    chunk_markdown, measure, ActionId, Button, ButtonPress, ButtonStyle, Capabilities, ChatAddress,
    OutgoingMessage, PlatformAdapter, PressAnswer, UserId,
};

const PREFIX: &str = "rs:";
/// Room kept on each page for its header line.
const HEADER_ROOM: usize = 64;

const NOT_YOURS: &str = "Only the person who asked can read this reasoning.";
const NOT_HERE: &str = "This reasoning can only be read in the chat it was given in.";
const GONE: &str = "This reasoning is no longer kept.";
const UNAVAILABLE: &str = "⚠️ I couldn't fetch that reasoning right now.";

/// The 💭 row for an answer whose reasoning was clipped, its note kept for
/// `user` in `chat`; none without buttons or when the note cannot be kept.
pub(crate) async fn show_all_button(
    inner: &Inner,
    adapter: &dyn PlatformAdapter,
    chat: &ChatAddress,
    user: UserId,
    whole: String,
) -> Vec<Vec<Button>> {
    let caps = adapter.capabilities();
    if !caps.buttons || !caps.answer_buttons {
        return Vec::new();
    }
    let id = new_id();
    let Some(button) = page_button("💭 Show all reasoning", &id, 0) else {
        return Vec::new();
    };
    let note = ReasoningNote {
        platform: chat.platform,
        chat: chat.chat,
        user,
        content: whole,
    };
    match inner.store.reasoning().save(&id, &note, Utc::now()).await {
        Ok(()) => vec![vec![button]],
        Err(e) => {
            tracing::warn!(error = %e, "could not keep the reasoning for its button");
            Vec::new()
        }
    }
}

/// `rs:<id>:<page>` → (note id, page from 0).
pub(crate) fn parse_action(action: &ActionId) -> Option<(String, usize)> {
    let rest = action.as_str().strip_prefix(PREFIX)?;
    let (id, page) = rest.rsplit_once(':')?;
    if id.is_empty() || id.len() > 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some((id.to_owned(), page.parse().ok()?))
}

/// A 💭 press: the page asked for, as a message in the chat (with a button
/// to the next page), or a private word why not.
pub(crate) async fn on_press(inner: &Inner, adapter: &dyn PlatformAdapter, press: &ButtonPress) {
    let Some((id, page)) = parse_action(&press.action) else {
        return;
    };
    let answer = match send_page(inner, adapter, press, &id, page).await {
        Ok(()) => PressAnswer::Ack,
        Err(why) => PressAnswer::Private(why.into()),
    };
    if let Err(e) = adapter.answer_press(press, answer).await {
        tracing::warn!(error = %e, "could not answer a press");
    }
}

async fn send_page(
    inner: &Inner,
    adapter: &dyn PlatformAdapter,
    press: &ButtonPress,
    id: &str,
    page: usize,
) -> Result<(), &'static str> {
    let note = match inner.store.reasoning().get(id).await {
        Ok(Some(note)) => note,
        Ok(None) => return Err(GONE),
        Err(e) => {
            tracing::warn!(error = %e, "could not read a reasoning note");
            return Err(UNAVAILABLE);
        }
    };
    if note.platform != press.chat.platform || note.user != press.user.id {
        return Err(NOT_YOURS);
    }
    if note.chat != press.chat.chat {
        return Err(NOT_HERE);
    }
    let pages = pages(&note.content, adapter.capabilities());
    let Some(text) = pages.get(page) else {
        return Err(GONE);
    };
    let count = pages.len();
    let body = format!("💭 _Reasoning, page {} of {count}_\n\n{text}", page + 1);
    let next: Vec<Vec<Button>> = (page + 1 < count)
        .then(|| page_button("Next page ▸", id, page + 1))
        .flatten()
        .map(|b| vec![vec![b]])
        .unwrap_or_default();
    let message = OutgoingMessage::text(body)
        .with_buttons(next)
        .replying_to(press.message.map(|m| m.id));
    adapter.send(&press.chat, message).await.map_err(|e| {
        tracing::warn!(error = %e, "could not send a reasoning page");
        UNAVAILABLE
    })?;
    Ok(())
}

/// The reasoning as pages that each fit a message with their header, in the
/// platform's unit; Markdown taken literally, line breaks kept.
pub(crate) fn pages(text: &str, caps: &Capabilities) -> Vec<String> {
    let escaped = text.lines().map(escape).collect::<Vec<_>>().join("\n");
    let limit = caps.max_message_len.saturating_sub(HEADER_ROOM).max(1);
    chunk_markdown(&escaped, limit, caps.length_unit)
        .into_iter()
        .filter(|p| measure(p.trim(), caps.length_unit) > 0)
        .collect()
}

fn page_button(label: &str, id: &str, page: usize) -> Option<Button> {
    ActionId::parse(&format!("{PREFIX}{id}:{page}")).map(|action| Button {
        label: label.into(),
        action,
        style: ButtonStyle::Secondary,
        shortcut: None,
    })
}

/// A fresh note id: 12 hex characters (it travels in the buttons).
fn new_id() -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(12);
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::LengthUnit;

    fn caps(max: usize) -> Capabilities {
        Capabilities {
            max_message_len: max,
            length_unit: LengthUnit::Utf16,
            can_edit: true,
            buttons: true,
            threads: false,
            min_edit_interval: std::time::Duration::ZERO,
            private_answers: true,
            max_upload_bytes: 1,
            max_download_bytes: 0,
            answer_buttons: true,
            local_operator: false,
            forms: false,
            menus: false,
        }
    }

    #[test]
    fn actions_round_trip_and_refuse_junk() {
        let button = page_button("x", "abc123", 4).unwrap();
        assert_eq!(parse_action(&button.action), Some(("abc123".to_owned(), 4)));
        for junk in ["rs:zz:1", "rs::1", "rs:abc:x", "fb:abc:u", "rs:abc"] {
            let action = ActionId::parse(junk).unwrap();
            assert_eq!(parse_action(&action), None, "{junk}");
        }
    }

    #[test]
    fn pages_fit_the_platform_with_their_header_and_keep_every_word() {
        let text = (0..400)
            .map(|n| format!("step_{n} 😀 weighs *this*"))
            .collect::<Vec<_>>()
            .join("\n");
        let caps = caps(500);
        let pages = pages(&text, &caps);
        assert!(pages.len() > 10, "{}", pages.len());
        for (i, page) in pages.iter().enumerate() {
            let shown = format!(
                "💭 _Reasoning, page {} of {}_\n\n{page}",
                i + 1,
                pages.len()
            );
            assert!(measure(&shown, LengthUnit::Utf16) <= 500, "{shown}");
        }
        let joined = pages.join("\n").replace('\\', "");
        for n in [0, 199, 399] {
            assert!(
                joined.contains(&format!("step_{n} 😀 weighs *this*")),
                "{n}"
            );
        }
    }
}
