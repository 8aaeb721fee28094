//! Reactions as status: the user's message shows where its turn is —
//! received, working, done, failed — as the bot's own reaction on it, where
//! the adapter has them on (`REACTIONS`).
//!
//! Each message has one small worker that brings the platform to the latest
//! state asked for: states asked for while one is still on its way replace
//! it (a reaction replaces the previous one anyway), and a state that gave way
//! to other calls (reactions go at the lowest priority, like typing) is tried
//! again a little later. The worker ends with a final state shown.

use crate::agent::StopReason;
use crate::domain::FeedbackId;
use crate::gateway::Inner;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{Button, MessageRef, PlatformAdapter, PlatformError, Status};
use tokio::sync::watch;

/// How soon a reaction that gave way is tried again.
const RETRY: Duration = Duration::from_millis(200);
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
    // What is on the message, and the last state tried.
    let mut on: Option<Status> = None;
    let mut tried: Option<Status> = None;
    let mut since = tokio::time::Instant::now();
    loop {
        let want = *rx.borrow_and_update();
        if tried != Some(want) {
            match adapter.set_status(&target, want, on).await {
                Ok(true) => (on, tried) = (Some(want), Some(want)),
                Ok(false) if since.elapsed() < GIVE_UP => {
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
                Ok(false) => {
                    tracing::debug!(message = %target.id, ?want, "status reaction gave way too long; skipped");
                    tried = Some(want);
                }
                Err(PlatformError::Unsupported(_)) => break,
                Err(e) => {
                    tracing::debug!(message = %target.id, ?want, error = %e, "status reaction refused");
                    tried = Some(want);
                }
            }
        }
        if want.is_final() {
            let mut map = lock(&shown);
            if !rx.has_changed().unwrap_or(false) {
                map.remove(&target);
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
    lock(&shown).remove(&target);
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
