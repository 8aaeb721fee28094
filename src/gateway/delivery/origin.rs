//! Who a turn answers: the conversation, the adapter that reaches it, the
//! session, and when the message was sent — what delivery needs of a turn.

use crate::domain::{Conversation, SessionId};
use std::sync::Arc;
use switchboard_platform::PlatformAdapter;

/// Who a turn answers, where, and through which adapter and session.
pub(in crate::gateway) struct Origin {
    pub(in crate::gateway) conversation: Conversation,
    pub(in crate::gateway) adapter: Arc<dyn PlatformAdapter>,
    pub(in crate::gateway) session: SessionId,
    /// When the user's message was sent (the platform's stamp); none for a
    /// resumed turn, a notification or a schedule.
    pub(in crate::gateway) sent_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The chat's settings (`CHATS_FILE`) as the turn began: one copy read
    /// once and used for the whole turn, so a reload never mixes versions.
    pub(in crate::gateway) chat: Option<crate::chats::ChatSettings>,
}
