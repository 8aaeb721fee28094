//! Inbound events: every message and button press, normalized.

use crate::form::PressInput;
use crate::ids::{ActionId, ChatAddress, ChatId, ChatKind, MessageId, MessageRef, UserId};
use crate::media::Attachment;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One normalized event from a platform.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Inbound {
    Message(InboundMessage),
    ButtonPress(ButtonPress),
    /// A user added a reaction to a message.
    Reaction(crate::status::Reaction),
}

/// A person (or bot) on a platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Configured as an approver on this platform (by id or role); set by the adapter.
    pub is_approver: bool,
    pub id: UserId,
    pub display_name: String,
    pub is_bot: bool,
}

/// Why a message is meant for the bot. Group messages that are
/// [`Addressed::NotAddressed`] are ignored by the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Addressed {
    /// A direct message: always addressed.
    Dm,
    /// The bot was @mentioned.
    Mention,
    /// The message replies to one of the bot's messages.
    ReplyToBot,
    /// A `/command@bot` or a bare `/command` the platform routed to the bot.
    Command,
    /// A channel configured to be answered without mention.
    FreeChannel,
    /// Group chatter not meant for the bot.
    NotAddressed,
}

impl Addressed {
    pub fn is_addressed(self) -> bool {
        !matches!(self, Addressed::NotAddressed)
    }
}

/// A text message. `text` is normalized: bot mentions and `@botname` command
/// suffixes removed, media captions used as text.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InboundMessage {
    pub chat: ChatAddress,
    pub chat_kind: ChatKind,
    pub user: User,
    pub message_id: MessageId,
    pub text: String,
    pub reply_to: Option<MessageId>,
    pub addressed: Addressed,
    /// Files that came with the message (an album arrives as one message).
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    pub timestamp: DateTime<Utc>,
    /// Where a thread is a chat of its own (Discord): the channel it was
    /// opened in, so the chat's settings can fall back to the channel's.
    #[serde(default)]
    pub parent: Option<ChatId>,
}

impl InboundMessage {
    pub fn message_ref(&self) -> MessageRef {
        MessageRef {
            chat: self.chat,
            id: self.message_id,
        }
    }
}

/// What the adapter needs to answer a press (Telegram callback query id,
/// Discord interaction id + token). Opaque to the core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PressHandle(pub String);

/// A button press, a choice in a menu, or a form sent back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ButtonPress {
    pub chat: ChatAddress,
    pub chat_kind: ChatKind,
    pub user: User,
    pub action: ActionId,
    /// The message carrying the button, when the platform says.
    pub message: Option<MessageRef>,
    pub handle: PressHandle,
    pub timestamp: DateTime<Utc>,
    /// As [`InboundMessage::parent`]: a thread's channel, where the platform says.
    #[serde(default)]
    pub parent: Option<ChatId>,
    /// The values chosen in a menu or sent in a form; nothing for a button.
    #[serde(default)]
    pub input: PressInput,
}
