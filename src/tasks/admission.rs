//! Admission of a new background task: recorded only while its user has
//! fewer than `MAX_TASKS_PER_USER` unfinished tasks across all their chats,
//! counted in the database so the cap holds across gateway processes.

use super::TaskOrigin;
use crate::store::{Admission, Store, StoreError, TaskRecord};

/// Why a background task was not started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The model sees this text as the call's error.
    #[error(
        "you already have {held} background task(s) queued or running (the limit is {cap} per user, \
         across all chats); this one was not started. Wait for one to finish or cancel one, then try again"
    )]
    UserCap { cap: usize, held: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Records `record` as run by `owner` (this process) for `origin`'s user
/// unless that user is at `cap`.
pub(super) async fn admit(
    store: &Store,
    record: &TaskRecord,
    owner: &crate::domain::ProcessId,
    origin: &TaskOrigin,
    cap: usize,
) -> Result<(), StartError> {
    match store
        .tasks()
        .insert_within_cap(
            record,
            owner,
            origin.conversation.key.platform,
            origin.conversation.key.user,
            cap,
        )
        .await?
    {
        Admission::Admitted => Ok(()),
        Admission::Full(held) => Err(StartError::UserCap { cap, held }),
    }
}
