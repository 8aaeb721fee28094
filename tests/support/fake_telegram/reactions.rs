//! Reactions in the fake: `setMessageReaction` as strict as Telegram (only
//! the emoji of its fixed `ReactionTypeEmoji` list — anything else, ✅ and ❌
//! included, is `400 Bad Request: REACTION_INVALID` — at most one reaction
//! for a bot, an existing chat and message), and `message_reaction` updates
//! a user's reaction makes (created only when `allowed_updates` names them).

use super::api::{bad, chat_id, not_migrated, ApiError};
use super::{now_secs, FakeTelegram, FakeUser, Inner, Where};
use serde_json::{json, Value};

/// Telegram's `ReactionTypeEmoji` list (Bot API).
pub const ALLOWED: [&str; 73] = [
    "👍",
    "👎",
    "❤",
    "🔥",
    "🥰",
    "👏",
    "😁",
    "🤔",
    "🤯",
    "😱",
    "🤬",
    "😢",
    "🎉",
    "🤩",
    "🤮",
    "💩",
    "🙏",
    "👌",
    "🕊",
    "🤡",
    "🥱",
    "🥴",
    "😍",
    "🐳",
    "❤\u{200d}🔥",
    "🌚",
    "🌭",
    "💯",
    "🤣",
    "⚡",
    "🍌",
    "🏆",
    "💔",
    "🤨",
    "😐",
    "🍓",
    "🍾",
    "💋",
    "🖕",
    "😈",
    "😴",
    "😭",
    "🤓",
    "👻",
    "👨\u{200d}💻",
    "👀",
    "🎃",
    "🙈",
    "😇",
    "😨",
    "🤝",
    "✍",
    "🤗",
    "🫡",
    "🎅",
    "🎄",
    "☃",
    "💅",
    "🤪",
    "🗿",
    "🆒",
    "💘",
    "🙉",
    "🦄",
    "😘",
    "💊",
    "🙊",
    "😎",
    "👾",
    "🤷\u{200d}♂",
    "🤷",
    "🤷\u{200d}♀",
    "😡",
];

/// `setMessageReaction`: replaces the bot's reactions on a message.
pub(super) fn set_message_reaction(inner: &mut Inner, p: &Value) -> Result<Value, ApiError> {
    let chat = chat_id(p)?;
    not_migrated(inner, chat)?;
    if !inner.chats.contains_key(&chat) {
        return Err(bad("chat not found"));
    }
    let id = p["message_id"]
        .as_i64()
        .ok_or_else(|| bad("message identifier is not specified"))?;
    if !inner.messages.contains_key(&(chat, id)) {
        return Err(bad("message to react not found"));
    }
    let list = match &p["reaction"] {
        Value::Null => Vec::new(),
        Value::Array(list) => list.clone(),
        _ => return Err(bad("can't parse reaction types JSON object")),
    };
    if list.len() > 1 {
        return Err(bad("REACTIONS_TOO_MANY"));
    }
    for r in &list {
        match (r["type"].as_str(), r["emoji"].as_str()) {
            (Some("emoji"), Some(e)) if ALLOWED.contains(&e) => {}
            (Some("emoji"), _) => return Err(bad("REACTION_INVALID")),
            _ => return Err(bad("can't parse ReactionType")),
        }
    }
    Ok(json!(true))
}

impl FakeTelegram {
    /// The emoji of the bot's accepted `setMessageReaction` calls on
    /// `message_id` in `chat_id`, in order (an empty list clears: "").
    pub fn bot_reactions(&self, chat_id: i64, message_id: i64) -> Vec<String> {
        self.calls_to("setMessageReaction")
            .into_iter()
            .filter(|c| {
                c.ok && c.params["chat_id"].as_i64() == Some(chat_id)
                    && c.params["message_id"].as_i64() == Some(message_id)
            })
            .map(|c| {
                c.params["reaction"][0]["emoji"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// `from` adds `emoji` to message `message_id` (the reactions they had
    /// there before: none): a `message_reaction` update.
    pub fn react(&self, at: Where, from: &FakeUser, message_id: i64, emoji: &str) -> i64 {
        let (_, chat, _) = self.chat_for(at, from);
        self.push_raw(json!({"message_reaction": {
            "chat": chat, "message_id": message_id, "user": from.json(), "date": now_secs(),
            "old_reaction": [], "new_reaction": [{"type": "emoji", "emoji": emoji}]}}))
    }
}
