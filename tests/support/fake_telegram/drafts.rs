//! `sendMessageDraft` (Bot API 9.3) in the fake, as strict as Telegram: a
//! known private chat only (a group's or channel's negative id is
//! `400 TEXTDRAFT_PEER_INVALID`), a non-zero integer `draft_id`, 1–4096
//! characters of text after entity parsing and a known `parse_mode` (the
//! checks `sendMessage` makes), an existing topic when `message_thread_id`
//! is given; flood limits in a window of the chat's drafts (see `limits`).
//! An accepted draft is kept, in order, with its visible text; a test can
//! make a chat refuse drafts as a bot without them would be refused.

use super::api::{bad, chat_id, paced, parse_text, ApiError};
use super::{Entity, FakeTelegram, Inner};
use serde_json::{json, Value};
use std::collections::HashSet;
use tokio::time::Instant;

/// What Telegram answers a draft it will not show in `chat`.
const REFUSED: &str = "method sendMessageDraft is not available for this bot";

/// One accepted draft.
#[derive(Debug, Clone)]
pub struct StoredDraft {
    pub chat_id: i64,
    pub draft_id: i64,
    pub thread_id: Option<i64>,
    /// Visible text after entity parsing.
    pub text: String,
    pub entities: Vec<Entity>,
    pub parse_mode: Option<String>,
    /// When the fake accepted it.
    pub at: Instant,
}

/// The drafts the fake accepted, and the chats that refuse them.
#[derive(Debug, Default)]
pub(super) struct Drafts {
    shown: Vec<StoredDraft>,
    refused: HashSet<i64>,
}

pub(super) fn send_message_draft(
    inner: &mut Inner,
    p: &Value,
    arrived: Instant,
) -> Result<Value, ApiError> {
    let chat = chat_id(p)?;
    let Some(known) = inner.chats.get(&chat) else {
        return Err(bad("chat not found"));
    };
    if chat < 0 || known.is_group {
        return Err(bad("TEXTDRAFT_PEER_INVALID"));
    }
    let thread = p["message_thread_id"].as_i64();
    if thread.is_some_and(|t| !known.threads.contains(&t)) {
        return Err(bad("message thread not found"));
    }
    let draft_id = match &p["draft_id"] {
        Value::Null => return Err(bad("parameter \"draft_id\" is required")),
        id => id
            .as_i64()
            .filter(|id| *id != 0)
            .ok_or_else(|| bad("DRAFT_ID_INVALID"))?,
    };
    if inner.drafts.refused.contains(&chat) {
        return Err(bad(REFUSED));
    }
    paced(inner, chat, |limits| limits.check_draft(chat, arrived))?;
    let (text, entities) = parse_text(inner, chat, p)?;
    inner.drafts.shown.push(StoredDraft {
        chat_id: chat,
        draft_id,
        thread_id: thread,
        text,
        entities,
        parse_mode: p["parse_mode"].as_str().map(str::to_owned),
        at: Instant::now(),
    });
    Ok(json!(true))
}

impl FakeTelegram {
    /// The drafts accepted in `chat_id`, in order.
    pub fn drafts(&self, chat_id: i64) -> Vec<StoredDraft> {
        self.shared
            .lock()
            .drafts
            .shown
            .iter()
            .filter(|d| d.chat_id == chat_id)
            .cloned()
            .collect()
    }

    /// From now on `chat_id` refuses drafts with a 400, as Telegram does to
    /// a bot that may not use them.
    pub fn refuse_drafts(&self, chat_id: i64) {
        self.shared.lock().drafts.refused.insert(chat_id);
    }
}
