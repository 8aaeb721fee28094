//! Session workers: one turn at a time per session, later inputs queued in order.

use super::hold;
use super::stop::RunningTurn;
use super::turn;
use super::{Inner, Kept};
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
    Scheduled {
        origin: TurnOrigin,
        prompt: String,
    },
}

/// What a session worker runs: an input, or a paused turn to resume.
enum Work {
    Input(Box<SessionInput>),
    /// The turn paused on this approval was decided with nobody waiting for
    /// it here (restart, another process, the expiry sweeper). For an edit,
    /// `edit` receives the requester's next message, armed when this was queued.
    Resume {
        approval_id: String,
        edit: Option<oneshot::Receiver<String>>,
    },
}

struct Queued {
    work: Work,
    /// Where the message is kept until its turn starts.
    kept: Option<Kept>,
    _guard: BusyGuard,
}

/// A paused turn that takes the requester's next message as the new arguments
/// of `approval_id` once that approval is sent back for editing.
pub(crate) struct EditWaiter {
    pub approval_id: String,
    pub tx: oneshot::Sender<String>,
}

/// Armed while the turn waits for the decision, so an edit typed right after
/// the press reaches the turn instead of queueing behind it.
pub(crate) type Awaiting = Arc<Mutex<Option<EditWaiter>>>;

/// The dispatcher's handle on a session worker.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    tx: mpsc::UnboundedSender<Queued>,
    pub(crate) awaiting: Awaiting,
    running: RunningTurn,
}

impl SessionHandle {
    /// Starts the worker for `key`.
    pub(crate) fn spawn(inner: Arc<Inner>, key: SessionKey) -> SessionHandle {
        let (tx, mut rx) = mpsc::unbounded_channel::<Queued>();
        let awaiting: Awaiting = Arc::new(Mutex::new(None));
        let running = RunningTurn::default();
        let handle = SessionHandle {
            tx,
            awaiting: Arc::clone(&awaiting),
            running: running.clone(),
        };
        tokio::spawn(async move {
            loop {
                // Shutdown first: what is still queued stays in the inbox for
                // the next process rather than starting a turn bound to end.
                let queued = tokio::select! {
                    biased;
                    () = inner.shutdown.cancelled() => break,
                    q = rx.recv() => match q { Some(q) => q, None => break },
                };
                match queued.work {
                    Work::Input(input) => {
                        // Held (not dropped) while storage is down; its inbox
                        // row is given up only once its turn can start.
                        let Some(session) =
                            hold::session_when_stored(&inner, &key, Some(&input)).await
                        else {
                            break;
                        };
                        // Storage may answer just as the gateway stops: the
                        // message then stays kept for the next process.
                        if inner.shutdown.is_cancelled() {
                            break;
                        }
                        if let Some(kept) = queued.kept {
                            if !inner.taken(kept).await {
                                continue;
                            }
                        }
                        let cancel = running.begin(&inner.shutdown);
                        turn::process(&inner, key, session, &awaiting, *input, cancel).await;
                        running.end();
                    }
                    Work::Resume { approval_id, edit } => {
                        // A decided approval must not be lost to an outage
                        // either: its paused turn resumes once storage is back.
                        if hold::session_when_stored(&inner, &key, None)
                            .await
                            .is_none()
                        {
                            break;
                        }
                        let cancel = running.begin(&inner.shutdown);
                        turn::resume(&inner, &awaiting, &approval_id, edit, cancel).await;
                        running.end();
                    }
                }
            }
        });
        handle
    }

    /// Queues an input; it holds `guard` (the gateway stays busy) until processed.
    pub(crate) fn enqueue(&self, input: SessionInput, guard: BusyGuard) -> bool {
        self.send(Work::Input(Box::new(input)), None, guard)
    }

    /// Queues a user message kept as `kept` (if it could be).
    pub(crate) fn enqueue_message(
        &self,
        msg: InboundMessage,
        kept: Option<Kept>,
        guard: BusyGuard,
    ) -> bool {
        self.send(
            Work::Input(Box::new(SessionInput::Message(msg))),
            kept,
            guard,
        )
    }

    /// Queues the resumption of the turn paused on `approval_id`. When it was
    /// sent back for editing, the requester's next message is taken for it from
    /// now on, even while the session is still busy before the resumption.
    pub(crate) fn enqueue_resume(
        &self,
        approval_id: String,
        edited: bool,
        guard: BusyGuard,
    ) -> bool {
        let edit = edited.then(|| {
            let (tx, rx) = oneshot::channel();
            *self.awaiting.lock().unwrap_or_else(|p| p.into_inner()) = Some(EditWaiter {
                approval_id: approval_id.clone(),
                tx,
            });
            rx
        });
        self.send(Work::Resume { approval_id, edit }, None, guard)
    }

    fn send(&self, work: Work, kept: Option<Kept>, guard: BusyGuard) -> bool {
        self.tx
            .send(Queued {
                work,
                kept,
                _guard: guard,
            })
            .is_ok()
    }

    /// Cancels the turn this session runs now (`/stop`); false when none runs.
    pub(crate) fn stop(&self) -> bool {
        self.running.stop()
    }

    /// The approval whose edit the paused turn of this session would take.
    pub(crate) fn awaited_approval(&self) -> Option<String> {
        self.awaiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|w| w.approval_id.clone())
    }

    /// Hands `text` to the paused turn waiting for an edit of `approval_id`.
    /// Returns false when none waits for it.
    pub(crate) fn deliver_awaited(&self, approval_id: &str, text: &str) -> bool {
        let mut slot = self.awaiting.lock().unwrap_or_else(|p| p.into_inner());
        match slot.take() {
            Some(w) if w.approval_id == approval_id => w.tx.send(text.to_owned()).is_ok(),
            other => {
                *slot = other;
                false
            }
        }
    }
}
