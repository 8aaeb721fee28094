//! An answer's native draft (Telegram private chats), shown by a task of its
//! own so that the stream never waits for it: updates coalesce — the task
//! shows the latest text it was given, at the platform's pace, and tries
//! again once what it gave way to is over (the adapter's wake-up, as for
//! status reactions) — and while nothing new comes (a long tool
//! call) it shows the draft again before the platform lets it lapse. It is
//! stopped before the final answer is sent, so no draft follows the answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{ChatAddress, DraftId, Drafts, GaveWay, PlatformAdapter, PlatformError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a draft that gave way (to the chat's message, the bot's quota
/// busy with messages, a pause) waits at most for that to be over before it
/// is tried again.
pub(super) const GAVE_WAY_WITHIN: Duration = Duration::from_secs(1);

/// What the task reports to the stream.
#[derive(Debug, Default)]
struct Report {
    /// When a draft was first shown.
    first_shown: Option<std::time::Instant>,
    /// The platform refused drafts in this chat.
    refused: bool,
}

/// The draft of one answer; stops its task when dropped.
pub(super) struct NativeDraft {
    id: DraftId,
    drafts: Drafts,
    text: watch::Sender<String>,
    report: Arc<Mutex<Report>>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl NativeDraft {
    pub(super) fn new(id: DraftId, drafts: Drafts) -> NativeDraft {
        NativeDraft {
            id,
            drafts,
            text: watch::Sender::new(String::new()),
            report: Arc::default(),
            stop: CancellationToken::new(),
            task: None,
        }
    }

    /// The least time between two updates.
    pub(super) fn interval(&self) -> Duration {
        self.drafts.min_interval
    }

    /// Shows `text` as soon as the platform's pace allows (replacing any
    /// text given before that was not shown yet).
    pub(super) fn show(
        &mut self,
        adapter: &Arc<dyn PlatformAdapter>,
        chat: ChatAddress,
        text: String,
    ) {
        if self.task.is_none() {
            let shower = Shower {
                adapter: Arc::clone(adapter),
                chat,
                id: self.id,
                drafts: self.drafts,
                text: self.text.subscribe(),
                report: Arc::clone(&self.report),
                stop: self.stop.clone(),
            };
            self.task = Some(tokio::spawn(shower.run()));
        }
        // After the task subscribed: it sees this text as new.
        self.text.send_replace(text);
    }

    /// When a draft was first shown, if one was.
    pub(super) fn first_shown(&self) -> Option<std::time::Instant> {
        self.lock().first_shown
    }

    /// Whether the platform refused drafts in this chat.
    pub(super) fn refused(&self) -> bool {
        self.lock().refused
    }

    /// Stops showing the draft: waits for an update on its way, sends no
    /// other.
    pub(super) async fn stop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            if let Err(e) = task.await {
                tracing::debug!(error = %e, "the draft's task ended badly");
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Report> {
        self.report.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for NativeDraft {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The task that shows one answer's draft.
struct Shower {
    adapter: Arc<dyn PlatformAdapter>,
    chat: ChatAddress,
    id: DraftId,
    drafts: Drafts,
    text: watch::Receiver<String>,
    report: Arc<Mutex<Report>>,
    stop: CancellationToken,
}

impl Shower {
    async fn run(mut self) {
        let mut next = Instant::now();
        let mut shown_at: Option<Instant> = None;
        // The latest text is not shown yet (it gave way or failed).
        let mut pending = false;
        loop {
            if !pending {
                // Something new, or the draft about to lapse.
                let lapse = shown_at.map(|at| at + self.drafts.lifetime * 2 / 3);
                tokio::select! {
                    biased;
                    () = self.stop.cancelled() => return,
                    changed = self.text.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    () = sleep_until(lapse) => {}
                }
            }
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep_until(next) => {}
            }
            let text = self.text.borrow_and_update().clone();
            let now = Instant::now();
            pending = true;
            match self.adapter.draft(&self.chat, self.id, &text).await {
                Ok(true) => {
                    pending = false;
                    shown_at = Some(now);
                    next = now + self.drafts.min_interval;
                    let mut report = self.report.lock().unwrap_or_else(|p| p.into_inner());
                    report
                        .first_shown
                        .get_or_insert_with(std::time::Instant::now);
                }
                Ok(false) => {
                    // Again as soon as what it gave way to is over.
                    tokio::select! {
                        biased;
                        () = self.stop.cancelled() => return,
                        () = self.adapter.wait_turn(&self.chat, GaveWay::Draft, GAVE_WAY_WITHIN) => {}
                    }
                    next = Instant::now();
                }
                Err(PlatformError::Unsupported(_)) => {
                    self.report
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .refused = true;
                    return;
                }
                Err(e) => {
                    next = now + self.drafts.min_interval;
                    tracing::debug!(error = %e, "draft update failed; the final answer will still be posted");
                }
            }
        }
    }
}

/// Sleeps until `at`; forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
