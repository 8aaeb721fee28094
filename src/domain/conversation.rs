//! Who and where: the one description of a conversation that turns, tasks,
//! schedules and approvals carry (and the store keeps as JSON on their rows).

use serde::{Deserialize, Serialize};
use switchboard_platform::{
    ChatAddress, ChatId, ChatKind, MessageId, Platform, ThreadId, User, UserId,
};

/// A session's key: one user in one chat (and thread). A DM is its own
/// session; in groups every user has their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SessionKey {
    pub platform: Platform,
    pub chat: ChatId,
    pub thread: Option<ThreadId>,
    pub user: UserId,
}

impl SessionKey {
    /// The session of `user` in `chat`.
    pub fn of(chat: &ChatAddress, user: UserId) -> SessionKey {
        SessionKey {
            platform: chat.platform,
            chat: chat.chat,
            thread: chat.thread,
            user,
        }
    }
}

/// A conversation: its session, the chat (and thread) answers go to, what kind
/// of chat it is, who speaks, and the message a turn answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conversation {
    pub key: SessionKey,
    pub chat: ChatAddress,
    /// A direct message or a shared chat; rows written before this was kept
    /// read as shared, the cautious choice for what memory may show.
    #[serde(default = "shared")]
    pub kind: ChatKind,
    pub user: User,
    /// The message the turn answers (none for a notification or a schedule).
    pub reply_to: Option<MessageId>,
}

fn shared() -> ChatKind {
    ChatKind::Group
}

impl Conversation {
    /// `user` speaking in `chat` (of `kind`), answered as a reply to `reply_to`.
    pub fn new(
        chat: ChatAddress,
        kind: ChatKind,
        user: User,
        reply_to: Option<MessageId>,
    ) -> Conversation {
        Conversation {
            key: SessionKey::of(&chat, user.id),
            chat,
            kind,
            user,
            reply_to,
        }
    }
}
