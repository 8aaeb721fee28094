//! What a session hands its turn: a user's message, a background task's
//! notification, or a fired schedule.

use crate::domain::Conversation;
use crate::tasks::TaskFinished;
use switchboard_platform::InboundMessage;

/// What a session works on.
pub(crate) enum SessionInput {
    Message(InboundMessage),
    Notification(TaskFinished),
    /// A schedule fired: run its prompt in the owner's session.
    Scheduled {
        origin: Conversation,
        prompt: String,
    },
}
