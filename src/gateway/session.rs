//! Session workers: one turn at a time per session, later inputs queued in order.

use super::hold;
use super::stop::RunningTurn;
use super::turn;
use super::{Inner, Kept};
use crate::approvals::Decision;
use crate::busy::BusyGuard;
use crate::domain::{Conversation, SessionKey};
use crate::tasks::TaskFinished;
use std::sync::Arc;
use switchboard_platform::InboundMessage;
use tokio::sync::mpsc;

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

/// What a session worker runs: an input, or a paused turn to resume.
enum Work {
    Input(Box<SessionInput>),
    /// The approval this turn paused on was decided (a press, `/approve`, the
    /// expiry sweeper — in this process or, after a restart, another), with
    /// the decision when the decider passed it along (final: no read needed).
    Resume {
        approval_id: String,
        decided: Option<Decision>,
    },
}

struct Queued {
    work: Work,
    /// Where the message is kept until its turn starts.
    kept: Option<Kept>,
    _guard: BusyGuard,
}

/// The dispatcher's handle on a session worker.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    tx: mpsc::UnboundedSender<Queued>,
    running: RunningTurn,
}

impl SessionHandle {
    /// Starts the worker for `key`.
    pub(crate) fn spawn(inner: Arc<Inner>, key: SessionKey) -> SessionHandle {
        let (tx, mut rx) = mpsc::unbounded_channel::<Queued>();
        let running = RunningTurn::default();
        let handle = SessionHandle {
            tx,
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
                        turn::process(&inner, key, session, *input, cancel).await;
                        running.end();
                    }
                    Work::Resume {
                        approval_id,
                        decided,
                    } => {
                        // Held through an outage by the claim itself.
                        let cancel = running.begin(&inner.shutdown);
                        super::resume::resume(&inner, &approval_id, decided, cancel).await;
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

    /// Queues the resumption of the turn paused on `approval_id`.
    pub(crate) fn enqueue_resume(
        &self,
        approval_id: String,
        decided: Option<Decision>,
        guard: BusyGuard,
    ) -> bool {
        self.send(
            Work::Resume {
                approval_id,
                decided,
            },
            None,
            guard,
        )
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
}
