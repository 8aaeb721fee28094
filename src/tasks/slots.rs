//! How many background tasks a conversation runs at once: one semaphore per
//! conversation, made on first use and dropped when its last task ends.

use crate::domain::SessionId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A conversation's place in line: either a running slot, or the semaphore to
/// wait on for one.
pub(crate) enum Slot {
    Running(OwnedSemaphorePermit),
    Queued(Arc<Semaphore>),
}

pub(crate) struct Slots {
    per_session: usize,
    sessions: Mutex<HashMap<SessionId, Arc<Semaphore>>>,
}

impl Slots {
    pub(crate) fn new(per_session: usize) -> Slots {
        Slots {
            per_session: per_session.max(1),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn per_session(&self) -> usize {
        self.per_session
    }

    /// A running slot of `session` if one is free, else the line to wait in.
    pub(crate) fn take(&self, session: &SessionId) -> Slot {
        let semaphore = Arc::clone(
            self.lock()
                .entry(session.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_session))),
        );
        match Arc::clone(&semaphore).try_acquire_owned() {
            Ok(permit) => Slot::Running(permit),
            Err(_) => Slot::Queued(semaphore),
        }
    }

    /// Forgets `session`'s semaphore once no task holds or waits for it.
    pub(crate) fn release(&self, session: &SessionId) {
        let mut sessions = self.lock();
        if sessions
            .get(session)
            .is_some_and(|s| Arc::strong_count(s) == 1)
        {
            sessions.remove(session);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<Semaphore>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_conversation_runs_its_limit_and_queues_the_rest() {
        let slots = Slots::new(2);
        let a = slots.take(&"s".parse().unwrap());
        let b = slots.take(&"s".parse().unwrap());
        let c = slots.take(&"s".parse().unwrap());
        assert!(matches!(a, Slot::Running(_)));
        assert!(matches!(b, Slot::Running(_)));
        let Slot::Queued(line) = c else {
            panic!("third task should queue")
        };
        // Another conversation is not held up.
        assert!(matches!(
            slots.take(&"other".parse().unwrap()),
            Slot::Running(_)
        ));
        drop(a);
        let permit = line.acquire_owned().await;
        assert!(permit.is_ok());
    }

    #[test]
    fn a_conversation_without_tasks_is_forgotten() {
        let slots = Slots::new(1);
        let held = slots.take(&"s".parse().unwrap());
        slots.release(&"s".parse().unwrap());
        assert_eq!(slots.lock().len(), 1, "still held");
        drop(held);
        slots.release(&"other".parse().unwrap());
        slots.release(&"s".parse().unwrap());
        assert!(slots.lock().is_empty());
    }
}
