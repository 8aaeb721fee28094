//! Reactions: the bot's status reaction on a user's message
//! (`setMessageReaction`, at the pacer's lowest priority like typing) and the
//! reactions users put on messages (`message_reaction` updates).
//!
//! Telegram only accepts the emoji of its fixed list ([`ALLOWED`], from the
//! Bot API's `ReactionTypeEmoji`); anything else is refused with
//! `400 Bad Request: REACTION_INVALID`, so the settings are checked against
//! it at start.

use crate::errors::{classify, to_platform};
use crate::send::{tg_message_id, Lane, Outbound};
use chrono::Utc;
use switchboard_platform::{
    ChatAddress, ChatId, GaveWay, MessageId, MessageRef, Platform, PlatformError, Reaction,
    StatusEmoji,
};
use teloxide::payloads::SetMessageReactionSetters;
use teloxide::prelude::Requester;
use teloxide::types::{ChatId as TgChatId, MessageReactionUpdated, ReactionType};

/// The emoji Telegram accepts as a reaction (`ReactionTypeEmoji.emoji`).
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

/// The status emoji used unless configured: all on Telegram's list (✅ and
/// ❌ are not).
pub fn default_status_emoji() -> StatusEmoji {
    StatusEmoji::new("👀", "✍", "👌", "💔")
}

/// `emoji` as Telegram lists it: without the variation selector (U+FE0F)
/// keyboards add (`✍️` → `✍`).
pub fn telegram_form(emoji: &str) -> String {
    emoji.chars().filter(|c| *c != '\u{fe0f}').collect()
}

/// Whether Telegram accepts `emoji` as a reaction.
pub fn allowed_reaction(emoji: &str) -> bool {
    ALLOWED.contains(&telegram_form(emoji).as_str())
}

impl Outbound {
    /// Waits until what a lowest-priority `call` gave way to in `chat` is
    /// over, at most `within`: the chat's call in flight or its pause, and
    /// for a draft the drafts' own pause too.
    pub(crate) async fn wait_idle(
        &self,
        chat: &ChatAddress,
        call: GaveWay,
        within: std::time::Duration,
    ) {
        let id = self.current(chat).chat.0;
        let (messages, drafts) = (Lane::Chat(id), Lane::Drafts(id));
        let keys: &[&Lane] = match call {
            GaveWay::Status => &[&messages],
            GaveWay::Draft => &[&messages, &drafts],
        };
        self.pacer.wait_idle(keys, within).await;
    }

    /// Sets the bot's reaction on `target` to `emoji` (replacing its
    /// previous one: Telegram sets the whole list), if it can go at once
    /// without delaying a message. `Ok(false)` when it gave way.
    pub(crate) async fn react(
        &self,
        target: &MessageRef,
        emoji: &str,
    ) -> Result<bool, PlatformError> {
        let to = self.current(&target.chat);
        let reaction = vec![ReactionType::Emoji {
            emoji: telegram_form(emoji),
        }];
        let req = self
            .bot
            .set_message_reaction(TgChatId(to.chat.0), tg_message_id(target.id)?)
            .reaction(reaction);
        let sent = self
            .pacer
            .run_if_idle(
                &[&crate::send::Lane::Chat(to.chat.0)],
                move || async move { req.await },
                classify,
            )
            .await;
        match sent {
            None => Ok(false),
            Some(r) => r.map(|_| true).map_err(|e| to_platform(&e, &self.token)),
        }
    }
}

/// The emoji a `message_reaction` update added (in the new list, not the
/// old), with who reacted and where; `None` for an anonymous (chat) actor
/// or when nothing was added.
pub(crate) fn added(
    update: &MessageReactionUpdated,
    user: switchboard_platform::User,
    chat_kind: switchboard_platform::ChatKind,
) -> Option<Reaction> {
    let emoji: Vec<String> = update
        .new_reaction
        .iter()
        .filter(|r| !update.old_reaction.contains(r))
        .filter_map(|r| r.emoji().cloned())
        .collect();
    if emoji.is_empty() {
        return None;
    }
    let chat = ChatAddress::new(Platform::Telegram, ChatId(update.chat.id.0), None);
    Some(Reaction {
        chat,
        chat_kind,
        user,
        message: MessageRef {
            chat,
            id: MessageId(i64::from(update.message_id.0)),
        },
        emoji,
        timestamp: Utc::now(),
        parent: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_has_the_status_defaults_but_not_check_marks() {
        let d = default_status_emoji();
        for e in [&d.received, &d.working, &d.done, &d.failed] {
            assert!(allowed_reaction(e), "{e}");
        }
        assert!(allowed_reaction("✍️"), "the variation selector is dropped");
        assert!(!allowed_reaction("✅"));
        assert!(!allowed_reaction("❌"));
    }
}
