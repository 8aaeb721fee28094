//! Session workers: one turn at a time per session, later inputs queued in order.

use super::turn;
use super::Inner;
use crate::busy::BusyGuard;
use crate::store::{SessionKey, TurnOrigin};
use crate::tasks::TaskFinished;
use std::sync::{Arc, Mutex};
use switchboard_platform::InboundMessage;
use tokio::sync::{mpsc, oneshot};

/// What a session works on.
pub(crate) enum SessionInput {
    Message(InboundMessage),
    Notification(TaskFinished),
    /// A schedule fired: run its prompt in the owner's session.
    Scheduled { origin: TurnOrigin, prompt: String },
}

struct Queued {
    input: SessionInput,
    _guard: BusyGuard,
}

/// A paused turn waiting for the user's next message (approval edits).
pub(crate) type Awaiting = Arc<Mutex<Option<oneshot::Sender<String>>>>;

/// The dispatcher's handle on a session worker.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    tx: mpsc::UnboundedSender<Queued>,
    pub(crate) awaiting: Awaiting,
}

impl SessionHandle {
    /// Starts the worker for `key`.
    pub(crate) fn spawn(inner: Arc<Inner>, key: SessionKey) -> SessionHandle {
        let (tx, mut rx) = mpsc::unbounded_channel::<Queued>();
        let awaiting: Awaiting = Arc::new(Mutex::new(None));
        let handle = SessionHandle { tx, awaiting: Arc::clone(&awaiting) };
        tokio::spawn(async move {
            loop {
                let queued = tokio::select! {
                    q = rx.recv() => match q { Some(q) => q, None => break },
                    () = inner.shutdown.cancelled() => break,
                };
                turn::process(&inner, key, &awaiting, queued.input).await;
            }
        });
        handle
    }

    /// Queues an input; it holds `guard` (the gateway stays busy) until processed.
    pub(crate) fn enqueue(&self, input: SessionInput, guard: BusyGuard) -> bool {
        self.tx.send(Queued { input, _guard: guard }).is_ok()
    }

    /// Hands `text` to a paused turn waiting for it. Returns false when none waits.
    pub(crate) fn deliver_awaited(&self, text: &str) -> bool {
        let waiter = self.awaiting.lock().unwrap_or_else(|p| p.into_inner()).take();
        match waiter {
            Some(tx) => tx.send(text.to_owned()).is_ok(),
            None => false,
        }
    }
}
