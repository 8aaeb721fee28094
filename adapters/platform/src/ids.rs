//! Typed identities: platforms, chats, threads, users, messages and button actions.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A chat platform. Closed set: adding a platform means adding an adapter
/// crate (tests run their in-memory channel as the console, whose special
/// treatment is a declared capability, not its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    Console,
    Telegram,
    Discord,
}

impl Platform {
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Console => "console",
            Platform::Telegram => "telegram",
            Platform::Discord => "discord",
        }
    }

    pub fn parse(s: &str) -> Option<Platform> {
        match s {
            "console" => Some(Platform::Console),
            "telegram" => Some(Platform::Telegram),
            "discord" => Some(Platform::Discord),
            _ => None,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl $name {
            pub fn get(self) -> i64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// A chat (Telegram chat id, Discord channel id). Discord snowflakes fit in i64.
    ChatId
);
id_type!(
    /// A thread inside a chat (Telegram forum topic, Discord thread channel).
    ThreadId
);
id_type!(
    /// A platform user.
    UserId
);
id_type!(
    /// A message inside a chat.
    MessageId
);

/// What kind of conversation a chat is; decides gating and session keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    Dm,
    Group,
    Channel,
    Thread,
}

impl ChatKind {
    pub fn is_private(self) -> bool {
        matches!(self, ChatKind::Dm)
    }
}

/// Where to post: a chat on a platform, optionally inside a thread or topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatAddress {
    pub platform: Platform,
    pub chat: ChatId,
    pub thread: Option<ThreadId>,
}

impl ChatAddress {
    pub fn new(platform: Platform, chat: ChatId, thread: Option<ThreadId>) -> Self {
        Self {
            platform,
            chat,
            thread,
        }
    }
}

/// A message the adapter sent or received, addressable for edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MessageRef {
    pub chat: ChatAddress,
    pub id: MessageId,
}

/// The id of a native draft ([`crate::PlatformAdapter::draft`]): one per
/// answer, never zero; updates with the same id replace (and animate) the
/// same draft. At most `i32::MAX`, so it fits every platform's integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DraftId(std::num::NonZeroU32);

impl DraftId {
    /// `None` for zero and for values past `i32::MAX`.
    pub fn new(id: u32) -> Option<DraftId> {
        if id > i32::MAX.unsigned_abs() {
            return None;
        }
        std::num::NonZeroU32::new(id).map(DraftId)
    }

    pub fn get(self) -> u32 {
        self.0.get()
    }
}

/// The opaque id a button carries. Its meaning lives in the core's database.
///
/// At most [`ActionId::MAX_LEN`] ASCII bytes so that it fits Telegram's 64-byte
/// `callback_data` and Discord's 100-character `custom_id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActionId(String);

impl ActionId {
    pub const MAX_LEN: usize = 64;

    /// Accepts printable ASCII up to 64 bytes; anything else is not an action id.
    pub fn parse(raw: &str) -> Option<ActionId> {
        let ok = !raw.is_empty()
            && raw.len() <= Self::MAX_LEN
            && raw.bytes().all(|b| b.is_ascii_graphic());
        ok.then(|| ActionId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ActionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_ids_are_short_printable_ascii() {
        assert!(ActionId::parse("ap:0123456789abcdef:allow").is_some());
        assert!(ActionId::parse("").is_none());
        assert!(ActionId::parse(&"x".repeat(65)).is_none());
        assert!(ActionId::parse("has space").is_none());
        assert!(ActionId::parse("ünï").is_none());
    }

    #[test]
    fn draft_ids_are_positive_32_bit_integers() {
        assert!(DraftId::new(0).is_none());
        assert_eq!(DraftId::new(7).map(DraftId::get), Some(7));
        assert!(DraftId::new(i32::MAX.unsigned_abs()).is_some());
        assert!(DraftId::new(i32::MAX.unsigned_abs() + 1).is_none());
    }

    #[test]
    fn platform_round_trips() {
        for p in [Platform::Console, Platform::Telegram, Platform::Discord] {
            assert_eq!(Platform::parse(p.as_str()), Some(p));
        }
    }
}
