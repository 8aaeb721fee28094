//! Long polling: `getUpdates` with a persisted offset, updates forwarded in
//! receive order, unparseable updates logged and skipped.
//!
//! Updates are fetched as raw text and parsed one by one, so a single update
//! that cannot be parsed (a lone surrogate, nesting past serde_json's limit,
//! missing fields) never blocks the batch: it is counted and logged by its
//! `update_id` only, and the offset still moves past it.
//!
//! An update is confirmed only once the core has it: a batch is handed over
//! whole, then each update's receipt is awaited in order (see
//! [`switchboard_platform::Pending`]), and only then does the offset file —
//! and the next `getUpdates` — move past them. A crash before that gets
//! them again at the next start; the core drops the ones it had kept.
//!
//! The offset follows the ids Telegram returns, not their size: after a week
//! without updates Telegram restarts the `update_id` sequence at a random
//! value, possibly below our offset, and answers an offset from the old
//! sequence with the new updates until one from the new sequence confirms
//! them. So every update Telegram returns is forwarded unless it is one of the
//! last [`RECENT_IDS`] forwarded (a defensive dedupe), and the next offset is
//! always the last returned id + 1.
//!
//! Albums (see [`crate::album`]) are the exception: while one is held, the
//! next `getUpdates` asks from its first part again (without waiting, and
//! every 125 ms at most), so Telegram keeps the parts until the
//! album has gone to the core, and the saved offset stays below it. A crash
//! meanwhile loses nothing: the restart gets the parts again. Updates after
//! the album that were already forwarded come again too; they are dropped as
//! repeats (kept in `recent`, and in the offset file across a restart).

use crate::adapter::Inner;
use crate::album::Albums;
use crate::bad_update::parse_update;
use crate::errors::{scrubbed, UpdatesError};
use crate::get_updates::{get_updates, GetUpdates};
use crate::offset::{OffsetStore, Saved};
use crate::retry::Backoff;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{InboundSink, Pending, PlatformError};
use teloxide::prelude::Requester;
use teloxide::RequestError;
use tokio_util::sync::CancellationToken;

/// The update kinds we ask Telegram for (edits and channel posts are not used).
pub(crate) const ALLOWED_UPDATES: &[&str] = &["message", "callback_query", "message_reaction"];
const BATCH: u8 = 100;
/// While an album is held, how often `getUpdates` asks again (at most).
const REPOLL: Duration = Duration::from_millis(125);
/// How long a stopping poller still waits for the receipts of its batch.
const SETTLE_AT_STOP: Duration = Duration::from_secs(2);
/// How many forwarded update ids are remembered to drop a repeat.
const RECENT_IDS: usize = 256;

/// The last [`RECENT_IDS`] update ids forwarded, oldest first.
#[derive(Debug, Default)]
struct RecentIds(VecDeque<i64>);

impl RecentIds {
    fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.0.iter().copied()
    }

    fn contains(&self, id: i64) -> bool {
        self.0.contains(&id)
    }

    fn insert(&mut self, id: i64) {
        if self.0.len() == RECENT_IDS {
            self.0.pop_front();
        }
        self.0.push_back(id);
    }
}

/// Polls until `shutdown`. Only a closed sink ends it early.
pub(crate) async fn poll(
    inner: &Arc<Inner>,
    sink: &InboundSink,
    shutdown: &CancellationToken,
) -> Result<(), PlatformError> {
    prepare(inner).await;
    let mut p = Poller::resume(inner).await;
    let timeout = inner.config.poll_timeout_secs.min(15);
    loop {
        // The offset stays below an album until it is acknowledged (see
        // `persist`): which parts are done matters only to the webhook.
        let mut done = Vec::new();
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            sent = inner.flush_albums(&mut p.albums, sink, &mut done) => sent?,
        }
        p.persist().await;
        let held = p.albums.oldest_update();
        let params = GetUpdates {
            offset: held.or(p.last.map(|id| id + 1)),
            limit: BATCH,
            // Telegram answers at once anyway: it still holds the album.
            timeout: if held.is_some() { 0 } else { timeout },
            allowed_updates: ALLOWED_UPDATES,
        };
        let answer = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            answer = get_updates(&inner.bot, &params) => answer,
        };
        let pause = match answer {
            Ok(texts) => {
                p.answered();
                let mut batch = Vec::with_capacity(texts.len());
                for text in texts {
                    tokio::select! {
                        _ = shutdown.cancelled() => return Ok(()),
                        taken = p.take(&text, sink) => batch.extend(taken?),
                    }
                }
                let settled = p.settle_until_stop(batch, sink, shutdown).await;
                p.persist().await;
                switchboard_platform::failpoint::hit("confirmed");
                match settled {
                    Some(settled) => settled?,
                    None => return Ok(()),
                }
                // An album is held: look for more parts (and other chats'
                // messages) soon, and send it when its window ends.
                p.albums.next_deadline().map(|due| {
                    due.saturating_duration_since(tokio::time::Instant::now())
                        .min(REPOLL.min(inner.config.album_window / 4))
                })
            }
            Err(UpdatesError::Request(RequestError::RetryAfter(after))) => Some(after.duration()),
            Err(e) => Some(p.failed(&e)),
        };
        if let Some(wait) = pause {
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// Where polling stands: the last update confirmed, what was saved of it,
/// the ids forwarded lately, the albums held and the backoff after failures.
struct Poller<'a> {
    inner: &'a Arc<Inner>,
    store: OffsetStore,
    saved: Option<Saved>,
    last: Option<i64>,
    recent: RecentIds,
    albums: Albums,
    backoff: Backoff,
}

impl<'a> Poller<'a> {
    /// Picks up where the offset file says the last process stopped.
    async fn resume(inner: &'a Arc<Inner>) -> Poller<'a> {
        let store = OffsetStore::new(&inner.config.state_dir, inner.me.id);
        let saved = match store.load().await {
            Ok(saved) => saved,
            Err(e) => {
                tracing::error!(path = %store.path().display(), error = %e, "cannot read the Telegram offset file");
                None
            }
        };
        // Polling resumes after `last`; the updates listed as done after it
        // (forwarded while an album was held) are dropped when they come again.
        let last = saved.as_ref().map(|s| s.last);
        let mut recent = RecentIds::default();
        for id in saved.iter().flat_map(|s| s.done.iter().copied()) {
            recent.insert(id);
        }
        match last {
            Some(offset) => tracing::info!(offset, "Telegram long polling started"),
            None => tracing::info!("Telegram long polling started (no update seen yet)"),
        }
        let config = &inner.config;
        Poller {
            inner,
            store,
            saved,
            last,
            recent,
            albums: Albums::new(config.album_window),
            backoff: Backoff::new(config.poll_backoff, config.poll_backoff_max),
        }
    }

    /// `getUpdates` answered: the link is up again.
    fn answered(&mut self) {
        self.inner.link.connected();
        if let Some(r) = self.backoff.succeeded() {
            tracing::info!(
                failures = r.failures,
                down_for = ?r.down_for,
                "Telegram getUpdates works again"
            );
        }
    }

    /// One update of a batch, as Telegram's text: handed over (or held in
    /// its album) unless it repeats one forwarded lately, skipped and logged
    /// by its id when it does not parse. Returns its id and the receipt to
    /// wait for before it is confirmed (see [`Poller::settle`]).
    async fn take(
        &mut self,
        text: &str,
        sink: &InboundSink,
    ) -> Result<Option<(i64, Option<Pending>)>, PlatformError> {
        let (id, update) = match parse_update(text) {
            Ok(update) => (i64::from(update.id.0), Ok(update)),
            Err(bad) => match bad.update_id {
                Some(id) => (id, Err(bad)),
                None => {
                    self.inner.skipped.record(bad, "getUpdates");
                    return Ok(None);
                }
            },
        };
        let mut pending = None;
        if self.recent.contains(id) {
            tracing::debug!(update_id = id, "skipping an update already forwarded");
        } else {
            if let Some(previous) = self.last.filter(|l| id <= *l) {
                tracing::info!(
                    update_id = id,
                    previous,
                    "Telegram restarted the update_id sequence"
                );
            }
            match update {
                Ok(update) => {
                    pending = self.inner.dispatch(&update, sink, &mut self.albums).await?;
                }
                Err(bad) => self.inner.skipped.record(bad, "getUpdates"),
            }
            self.recent.insert(id);
        }
        Ok(Some((id, pending)))
    }

    /// [`Poller::settle`] until `shutdown`, then a moment more: the core
    /// acknowledges what it still has when it stops. `None` after a stop
    /// (what was settled by then is confirmed all the same).
    async fn settle_until_stop(
        &mut self,
        batch: Vec<(i64, Option<Pending>)>,
        sink: &InboundSink,
        shutdown: &CancellationToken,
    ) -> Option<Result<(), PlatformError>> {
        let settle = self.settle(batch, sink);
        tokio::pin!(settle);
        tokio::select! {
            biased;
            settled = &mut settle => return Some(settled),
            _ = shutdown.cancelled() => {}
        }
        let _ = tokio::time::timeout(SETTLE_AT_STOP, settle).await;
        None
    }

    /// Waits, in order, for the receipts of a batch's updates; each one
    /// acknowledged (or with nothing to acknowledge) becomes the last to
    /// confirm. An update the core could not keep is offered again until it
    /// is (see [`Pending::settle`]). `Err` when the core has gone away.
    async fn settle(
        &mut self,
        batch: Vec<(i64, Option<Pending>)>,
        sink: &InboundSink,
    ) -> Result<(), PlatformError> {
        for (id, pending) in batch {
            if let Some(pending) = pending {
                pending
                    .settle(sink)
                    .await
                    .map_err(|_| PlatformError::Closed)?;
            }
            // Whatever it was, the next offset confirms it.
            self.last = Some(id);
        }
        Ok(())
    }

    /// A failed `getUpdates`: logged (loudly once the failures add up), the
    /// link marked down; returns how long to wait before the next one.
    fn failed(&mut self, e: &UpdatesError) -> Duration {
        let error = match e {
            UpdatesError::Request(e) => scrubbed(e, &self.inner.config.token),
            other => other.to_string(),
        };
        let failure = self.backoff.failed();
        let hint = crate::retry::hint(e);
        if failure.loud {
            tracing::warn!(
                %error,
                failures = failure.count,
                retry_in = ?failure.wait,
                "Telegram getUpdates failed: {hint}; retrying with backoff"
            );
        } else {
            tracing::debug!(%error, failures = failure.count, retry_in = ?failure.wait, "getUpdates failed");
        }
        self.inner.link.failed(&error);
        failure.wait
    }

    async fn persist(&mut self) {
        persist(
            &self.store,
            &mut self.saved,
            self.last,
            &self.albums,
            &self.recent,
        )
        .await;
    }
}

/// Saves what is done when it changed: every update up to the last one,
/// or, while an album is held, up to just before its first part plus the
/// ids after it already forwarded.
async fn persist(
    store: &OffsetStore,
    saved: &mut Option<Saved>,
    last: Option<i64>,
    albums: &Albums,
    recent: &RecentIds,
) {
    let Some(last) = last else { return };
    let now = match albums.oldest_update() {
        None => Saved {
            last,
            done: Vec::new(),
        },
        Some(held) => {
            let mut done: Vec<i64> = recent
                .iter()
                .filter(|id| *id >= held && !albums.holds(*id))
                .collect();
            done.sort_unstable();
            Saved {
                last: held - 1,
                done,
            }
        }
    };
    if saved.as_ref() == Some(&now) {
        return;
    }
    match store.save(&now).await {
        Ok(()) => *saved = Some(now),
        Err(e) => {
            tracing::error!(path = %store.path().display(), error = %e, "cannot persist the Telegram offset");
        }
    }
}

/// Long polling and a webhook exclude each other: drop a leftover webhook.
async fn prepare(inner: &Arc<Inner>) {
    match inner.bot.get_webhook_info().await {
        Ok(info) if info.url.is_some() => {
            tracing::info!("removing the Telegram webhook to use long polling");
            if let Err(e) = inner.bot.delete_webhook().await {
                tracing::warn!(error = %scrubbed(&e, &inner.config.token), "deleteWebhook failed");
            }
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %scrubbed(&e, &inner.config.token), "getWebhookInfo failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_ids_remember_the_last_ones_only() {
        let mut recent = RecentIds::default();
        for id in 0..300 {
            recent.insert(id);
        }
        assert!(!recent.contains(43), "forgotten");
        assert!(recent.contains(44) && recent.contains(299));
        recent.insert(7);
        assert!(recent.contains(7) && !recent.contains(44));
        assert_eq!(recent.0.len(), RECENT_IDS);
    }
}
