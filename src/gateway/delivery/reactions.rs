//! Reactions as status: the user's message shows where its turn is —
//! received, working, done, failed — as the bot's own reaction on it, where
//! the adapter has them on (`REACTIONS`).
//!
//! Each message has one small worker that brings the platform to the latest
//! state asked for: states asked for while one is still on its way replace
//! it (a reaction replaces the previous one anyway), and a state that gave way
//! to other calls (reactions go at the lowest priority, like typing) is asked
//! again as soon as the chat's call in flight has ended — woken by the
//! adapter's pacer, never polling. "Received" shows only on a message that
//! waits for its turn; one whose turn starts at once goes straight to
//! "working". The worker ends with a final state shown.

use crate::agent::StopReason;
use crate::domain::FeedbackId;
use crate::gateway::Inner;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{Button, GaveWay, MessageRef, PlatformAdapter, PlatformError, Status};
use tokio::sync::watch;

/// How long a reaction that gave way waits at most for the chat's call in
/// flight to end before it is asked again (the bot-wide limit has no such
/// moment to wait for).
const RETRY_WITHIN: Duration = Duration::from_secs(1);
/// How long a message must wait for its turn before it shows "received".
const RECEIVED_AFTER: Duration = Duration::from_millis(400);
/// How long a state keeps trying to go out before it is given up.
const GIVE_UP: Duration = Duration::from_secs(120);
/// A message whose turn never reached a final state is forgotten after this.
const IDLE_CAP: Duration = Duration::from_secs(3600);

type Shown = Arc<Mutex<HashMap<MessageRef, watch::Sender<Status>>>>;

/// The messages whose status is being shown, each with its worker's input.
#[derive(Default)]
pub(crate) struct StatusBoard {
    shown: Shown,
}

impl StatusBoard {
    /// Shows `status` on `target` through `adapter` (nothing when the
    /// adapter has reactions off). Never waits: a worker sends it.
    pub(crate) fn show(
        &self,
        adapter: &Arc<dyn PlatformAdapter>,
        target: Option<MessageRef>,
        status: Status,
    ) {
        let Some(target) = target else { return };
        if !adapter.status_reactions() {
            return;
        }
        let mut shown = lock(&self.shown);
        if let Some(tx) = shown.get(&target) {
            if tx.send(status).is_ok() {
                return;
            }
        }
        let (tx, rx) = watch::channel(status);
        shown.insert(target, tx);
        let (shown, adapter) = (Arc::clone(&self.shown), Arc::clone(adapter));
        tokio::spawn(async move { work(shown, adapter, target, rx).await });
    }
}

/// The final state a turn that stopped for `stop` shows.
pub(crate) fn final_status(stop: &StopReason) -> Option<Status> {
    match stop {
        StopReason::Answered | StopReason::WaitingForUser => Some(Status::Done),
        StopReason::ModelError
        | StopReason::MaxRounds
        | StopReason::Deadline
        | StopReason::Cancelled => Some(Status::Failed),
        // Waiting for an approval: still working on it.
        StopReason::Paused => None,
    }
}

fn lock(shown: &Shown) -> std::sync::MutexGuard<'_, HashMap<MessageRef, watch::Sender<Status>>> {
    shown.lock().unwrap_or_else(|p| p.into_inner())
}

/// Brings `target`'s reaction to the latest state in `rx` until a final one
/// is shown (or given up), then forgets the message.
async fn work(
    shown: Shown,
    adapter: Arc<dyn PlatformAdapter>,
    target: MessageRef,
    mut rx: watch::Receiver<Status>,
) {
    let mut worker = Shower {
        adapter,
        target,
        on: None,
        tried: None,
    };
    worker.wait_out_received(&mut rx).await;
    let mut since = tokio::time::Instant::now();
    loop {
        let want = *rx.borrow_and_update();
        if worker.tried != Some(want) {
            match worker.try_show(want, since).await {
                Tried::Settled => {}
                Tried::GaveWay => {
                    // Asked again once the chat's call in flight ends, or
                    // at once for a newer state.
                    tokio::select! {
                        () = worker.adapter.wait_turn(&worker.target.chat, GaveWay::Status, RETRY_WITHIN) => {}
                        changed = rx.changed() => if changed.is_err() { break },
                    }
                    continue;
                }
                Tried::Unsupported => break,
            }
        }
        if want.is_final() {
            let mut map = lock(&shown);
            if !rx.has_changed().unwrap_or(false) {
                map.remove(&worker.target);
                return;
            }
            continue;
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { break },
            _ = tokio::time::sleep(IDLE_CAP) => break,
        }
        since = tokio::time::Instant::now();
    }
    lock(&shown).remove(&worker.target);
}

/// One message's reaction: what is on it, and the last state tried.
struct Shower {
    adapter: Arc<dyn PlatformAdapter>,
    target: MessageRef,
    on: Option<Status>,
    tried: Option<Status>,
}

enum Tried {
    /// Shown, or refused or given up (not asked again).
    Settled,
    /// It gave way to other calls: ask again.
    GaveWay,
    /// The adapter has no reactions.
    Unsupported,
}

impl Shower {
    /// A message whose turn starts at once is never shown as received:
    /// working follows within [`RECEIVED_AFTER`], one reaction instead of
    /// two (four calls on Discord, which takes the previous one off).
    async fn wait_out_received(&self, rx: &mut watch::Receiver<Status>) {
        if *rx.borrow() == Status::Received {
            let _ = tokio::time::timeout(RECEIVED_AFTER, rx.changed()).await;
        }
    }

    async fn try_show(&mut self, want: Status, since: tokio::time::Instant) -> Tried {
        let id = self.target.id;
        match self.adapter.set_status(&self.target, want, self.on).await {
            Ok(true) => (self.on, self.tried) = (Some(want), Some(want)),
            Ok(false) if since.elapsed() < GIVE_UP => return Tried::GaveWay,
            Ok(false) => {
                tracing::debug!(message = %id, ?want, "status reaction gave way too long; skipped");
                self.tried = Some(want);
            }
            Err(PlatformError::Unsupported(_)) => return Tried::Unsupported,
            Err(e) => {
                tracing::debug!(message = %id, ?want, error = %e, "status reaction refused");
                self.tried = Some(want);
            }
        }
        Tried::Settled
    }
}

/// The rateable answer whose 👍/👎 buttons are among `rows`.
pub(crate) fn rated_in(rows: &[Vec<Button>]) -> Option<FeedbackId> {
    rows.iter()
        .flatten()
        .find_map(|b| crate::memory::parse_feedback(&b.action))
        .map(|(id, _)| id)
}

/// Notes that answer `rated` is carried by `message` (the answer's last
/// message, the one with its buttons), so a reaction there rates it too.
pub(crate) async fn note_rated_message(
    inner: &Inner,
    rated: Option<FeedbackId>,
    message: Option<&MessageRef>,
) {
    let (Some(id), Some(message)) = (rated, message) else {
        return;
    };
    let noted = inner
        .store
        .memories()
        .set_feedback_message(&id, message.chat.chat.0, message.id.0)
        .await;
    if let Err(e) = noted {
        tracing::warn!(error = %e, "could not note the message of a rateable answer");
    }
}
