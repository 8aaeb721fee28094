//! Session workers: one turn at a time per session, later inputs queued in
//! order (or, per the session's `/queue` mode, collected into one turn).

use crate::approvals::Decision;
use crate::busy::BusyGuard;
use crate::domain::{ApprovalId, SessionKey};
use crate::gateway::session::hold;
use crate::gateway::session::input::{Kept, SessionInput};
use crate::gateway::session::queue_mode::{self, ModeCell, QueueMode};
use crate::gateway::session::runner::Runner;
use crate::gateway::session::running::RunningTurn;
use crate::gateway::Inner;
use std::sync::Arc;
use switchboard_platform::InboundMessage;
use tokio::sync::mpsc;
use tracing::Instrument;

/// What a session worker runs: an input, or a paused turn to resume.
enum Work {
    Input(Box<SessionInput>),
    /// The approval this turn paused on was decided (a press, `/approve`, the
    /// expiry sweeper — in this process or, after a restart, another), with
    /// the decision when the decider passed it along (final: no read needed).
    Resume {
        approval_id: ApprovalId,
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
    mode: ModeCell,
}

impl SessionHandle {
    /// Starts the worker for `key`, running its turns with `runner`.
    pub(crate) fn spawn(
        inner: Arc<Inner>,
        key: SessionKey,
        runner: Arc<dyn Runner>,
    ) -> SessionHandle {
        let (tx, rx) = mpsc::unbounded_channel::<Queued>();
        let running = RunningTurn::default();
        let mode = ModeCell::default();
        let handle = SessionHandle {
            tx,
            running: running.clone(),
            mode: mode.clone(),
        };
        let worker = Worker {
            inner,
            runner,
            key,
            rx,
            running,
            mode,
            pending: None,
        };
        tokio::spawn(worker.run());
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
        approval_id: ApprovalId,
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

    /// Whether a turn of this session runs now.
    pub(crate) fn is_running(&self) -> bool {
        self.running.is_running()
    }

    /// The session's queue mode; `default` until its worker has read it.
    pub(crate) fn mode(&self, default: QueueMode) -> QueueMode {
        self.mode.get().unwrap_or(default)
    }

    pub(crate) fn mode_cell(&self) -> ModeCell {
        self.mode.clone()
    }
}

/// A session's worker: takes its queued work one at a time, until shutdown.
struct Worker {
    inner: Arc<Inner>,
    /// What it runs turns with.
    runner: Arc<dyn Runner>,
    key: SessionKey,
    rx: mpsc::UnboundedReceiver<Queued>,
    running: RunningTurn,
    mode: ModeCell,
    /// Work met while collecting messages, next in line.
    pending: Option<Queued>,
}

/// Whether a worker goes on after a piece of work.
enum Flow {
    Next,
    Stop,
}

impl Worker {
    /// The worker's loop: the next work, run, until shutdown (or until the
    /// gateway drops the session's handle).
    async fn run(mut self) {
        while let Some(queued) = self.next().await {
            let Queued { work, kept, _guard } = queued;
            let flow = match work {
                Work::Input(input) => self.take_input(*input, kept).await,
                Work::Resume {
                    approval_id,
                    decided,
                } => {
                    self.resume(approval_id, decided).await;
                    Flow::Next
                }
            };
            if let Flow::Stop = flow {
                break;
            }
        }
    }

    /// The next work: one met while collecting, else the queue's head.
    /// Shutdown first: what is still queued stays in the inbox for the next
    /// process rather than starting a turn bound to end.
    async fn next(&mut self) -> Option<Queued> {
        if let Some(q) = self.pending.take() {
            return Some(q);
        }
        tokio::select! {
            biased;
            () = self.inner.life.shutdown.cancelled() => None,
            q = self.rx.recv() => q,
        }
    }

    /// An input's turn: held (not dropped) while storage is down, its inbox
    /// row given up only once its turn can start; in `collect` mode the
    /// messages queued behind it join it.
    async fn take_input(&mut self, input: SessionInput, kept: Option<Kept>) -> Flow {
        let (inner, key) = (Arc::clone(&self.inner), self.key);
        // A message that could not reach the inbox is already held in the
        // spool: its sender hears so now.
        let spooled = matches!(kept, Some(Kept::Spool(_)));
        let Some(session) = hold::session_when_stored(&inner, &key, Some(&input), spooled).await
        else {
            return Flow::Stop;
        };
        // Storage may answer just as the gateway stops: the message then
        // stays kept for the next process.
        if inner.life.shutdown.is_cancelled() {
            return Flow::Stop;
        }
        let mut rows = Vec::new();
        if let Some(kept) = kept {
            match inner.taken(kept).await {
                Some(row) => rows.extend(row),
                None => return Flow::Next,
            }
        }
        if self.mode.get().is_none() {
            self.mode
                .set(queue_mode::stored(&inner, &key, &session).await);
        }
        let mut input = input;
        let mut guards = Vec::new();
        if self.mode.get() == Some(QueueMode::Collect) {
            input = collect(
                &inner,
                self.runner.as_ref(),
                input,
                &mut self.rx,
                &mut self.pending,
                &mut guards,
                &mut rows,
            )
            .await;
        }
        let cancel = self.running.begin(&inner.life.shutdown);
        self.runner
            .run(&inner, key, session, input, rows, cancel)
            .instrument(crate::telemetry::turn_span(&key))
            .await;
        self.running.end();
        drop(guards);
        Flow::Next
    }

    /// A paused turn's resumption (held through an outage by the claim itself).
    async fn resume(&mut self, approval_id: ApprovalId, decided: Option<Decision>) {
        let cancel = self.running.begin(&self.inner.life.shutdown);
        self.runner
            .resume(&self.inner, approval_id, decided, cancel)
            .instrument(crate::telemetry::turn_span(&self.key))
            .await;
        self.running.end();
    }
}

/// `collect`: the messages queued behind `input` (sent while the last turn
/// ran) join it in one turn, up to the first other work (a command, a
/// notification, a resumption), which goes next. Each message's inbox row
/// is marked started as it joins (its id added to `rows`); their busy guards are held in `guards` until the
/// turn ends.
async fn collect(
    inner: &Arc<Inner>,
    runner: &dyn Runner,
    input: SessionInput,
    rx: &mut mpsc::UnboundedReceiver<Queued>,
    pending: &mut Option<Queued>,
    guards: &mut Vec<BusyGuard>,
    rows: &mut Vec<i64>,
) -> SessionInput {
    let SessionInput::Message(first) = input else {
        return input;
    };
    if runner.alone(&first) {
        return SessionInput::Message(first);
    }
    let mut messages = Vec::new();
    while let Ok(next) = rx.try_recv() {
        let Queued { work, kept, _guard } = next;
        match work {
            Work::Input(boxed) => match *boxed {
                SessionInput::Message(m) if !runner.alone(&m) => {
                    guards.push(_guard);
                    if let Some(kept) = kept {
                        match inner.taken(kept).await {
                            Some(row) => rows.extend(row),
                            None => continue,
                        }
                    }
                    messages.push(m);
                }
                other => {
                    *pending = Some(Queued {
                        work: Work::Input(Box::new(other)),
                        kept,
                        _guard,
                    });
                    break;
                }
            },
            work => {
                *pending = Some(Queued { work, kept, _guard });
                break;
            }
        }
    }
    if !messages.is_empty() {
        tracing::info!(
            messages = messages.len() + 1,
            "collected messages into one turn"
        );
    }
    SessionInput::Message(queue_mode::merge(first, messages))
}
