//! What a session is handed and hands its turn: a user's message, a
//! background task's notification, or a fired schedule; and where an
//! accepted message is kept until its turn starts.

use crate::domain::Conversation;
use crate::gateway::spool::SpoolFile;
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

/// Where an accepted message is kept until its turn starts.
#[derive(Debug)]
pub(crate) enum Kept {
    /// Its inbox row.
    Inbox(i64),
    /// Its file in this process's spool (storage was down).
    Spool(SpoolFile),
}
