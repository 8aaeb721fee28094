//! The pump: events from the gateway handlers (and backfills) held for the
//! reorder window, released per channel in snowflake order (see
//! `gateway.rs` for why), repeats dropped, normalized one at a time —
//! looking up and caching channel kinds (MESSAGE_CREATE does not say
//! whether it is a thread) and, for a message that mentions roles, the bot's
//! own roles in the guild — and handed to the core's sink. Each channel's
//! mark moves past a message only once the core has acknowledged it (or it
//! was dropped on purpose): receipts are awaited in order by a settler
//! beside the pump, so the pump never waits on the core's storage
//! (`marks.rs`).
use crate::adapter::Shared;
use crate::backfill;
use crate::errors::RestError;
use crate::gateway::{Event, Queued};
use crate::lookups::{Cached, Kind, Lookups, Roles};
use crate::normalize::{self, Context, Place};
use crate::order::Reorder;
use crate::recent::RecentIds;
use serenity::model::channel::Message;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use switchboard_platform::{Inbound, InboundSink};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Message ids the pump remembers: a whole backfill and then some.
const DELIVERED_MEMORY: usize = backfill::MAX_MESSAGES + 4096;

/// Moves events from the queue to the sink: each is held for the reorder
/// window, then released per channel in snowflake order and normalized.
pub(crate) async fn pump(
    mut queued: mpsc::Receiver<Queued>,
    shared: Arc<Shared>,
    sink: InboundSink,
    shutdown: CancellationToken,
) {
    let (settling, receipts) = mpsc::unbounded_channel();
    tokio::spawn(settle(receipts, Arc::clone(&shared), sink.clone()));
    let mut held = Reorder::new(shared.config.timings.reorder_window);
    // A message posted after a new session's READY arrives live and in its
    // backfill: the second copy is dropped.
    let mut delivered = RecentIds::new(DELIVERED_MEMORY);
    let mut open = true;
    while open || !held.is_empty() {
        let due = held.next_due();
        tokio::select! {
            next = queued.recv(), if open => match next {
                Some(next) => held.hold(next.channel, next.id, next.event, Instant::now()),
                None => open = false,
            },
            () = sleep_until(due), if due.is_some() => {}
            () = shutdown.cancelled() => return,
        }
        // Whatever else is queued already takes part in this round's order.
        while let Ok(next) = queued.try_recv() {
            held.hold(next.channel, next.id, next.event, Instant::now());
        }
        let ready = if open {
            held.release(Instant::now())
        } else {
            held.release_all()
        };
        // A restart must know every channel whose messages the core may not
        // have kept yet: a channel new to the marks file gets its mark
        // written before its first message is handed over.
        let mut new_channel = false;
        for event in &ready {
            if let Event::Message(m) = event {
                let guild = m.guild_id.map(|g| g.get());
                new_channel |= shared
                    .marks
                    .note_first(m.channel_id.get(), guild, m.id.get());
            }
        }
        if new_channel {
            shared.marks.flush().await;
        }
        for event in ready {
            // A channel's mark moves past a message once the core has it
            // (or it was dropped on purpose); never for a slash command,
            // whose id is an interaction's.
            let (inbound, mark) = match event {
                Event::Inbound(inbound) => (Some(*inbound), None),
                Event::Message(message) if !delivered.insert(message.id.get()) => continue,
                Event::Message(message) => {
                    let guild = message.guild_id.map(|g| g.get());
                    let mark = (message.channel_id.get(), guild, message.id.get());
                    let inbound = normalize_message(&shared, &message).await;
                    (inbound.map(Inbound::Message), Some(mark))
                }
            };
            let pending = match inbound {
                Some(inbound) => match sink.hand_over(inbound).await {
                    Ok(pending) => Some(pending),
                    Err(_) => {
                        tracing::info!(
                            "inbound sink closed; Discord events are no longer forwarded"
                        );
                        return;
                    }
                },
                None => None,
            };
            if settling.send((mark, pending)).is_err() {
                return;
            }
        }
    }
}

/// A channel's mark, moved once its message's receipt has come.
type Mark = (u64, Option<u64>, u64);

/// Awaits the receipts in the order the pump handed the events over, and
/// moves each channel's mark past its acknowledged messages (a message
/// the core could not keep is offered again until it is; until then no
/// mark moves past it).
async fn settle(
    mut receipts: mpsc::UnboundedReceiver<(Option<Mark>, Option<switchboard_platform::Pending>)>,
    shared: Arc<Shared>,
    sink: InboundSink,
) {
    while let Some((mark, pending)) = receipts.recv().await {
        if let Some(pending) = pending {
            if pending.settle(&sink).await.is_err() {
                return;
            }
        }
        if let Some((channel, guild, id)) = mark {
            shared.marks.delivered(channel, guild, id);
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

async fn normalize_message(
    shared: &Shared,
    message: &Message,
) -> Option<switchboard_platform::InboundMessage> {
    let bot_id = shared.bot_id.load(Ordering::Relaxed);
    if message.author.id.get() == bot_id {
        return None;
    }
    let place = if message.guild_id.is_some() {
        let kind = channel_kind(shared, message.channel_id.get()).await;
        normalize::place_of(true, Some(kind))
    } else {
        Place::Dm
    };
    // Only a message that mentions roles costs a look-up of the bot's roles.
    let own_roles = match message.guild_id {
        Some(guild) if normalize::mentions_roles(message) => {
            bot_roles(shared, guild.get(), bot_id).await
        }
        _ => Vec::new(),
    };
    let config = &shared.config;
    let ctx = Context {
        bot_id,
        bot_roles: &own_roles,
        approvers: &config.approvers,
        approver_roles: &config.approver_roles,
        free_channels: &config.free_channels,
    };
    normalize::message(message, place, &ctx, |id| shared.was_sent(id))
}

/// A guild channel's kind and parent, from the cache or `GET /channels/{id}`.
/// A failed look-up counts as a plain channel (the chat id is right either
/// way) and is tried again after [`DiscordTimings::lookup_retry`].
///
/// [`DiscordTimings::lookup_retry`]: crate::DiscordTimings::lookup_retry
async fn channel_kind(shared: &Shared, channel: u64) -> Kind {
    let look_up = async {
        let info = shared.rest.channel(channel).await?;
        let parent = info.parent_id.filter(|_| info.is_thread());
        Ok((info.kind, parent.map(|p| p.get())))
    };
    cached(shared, &shared.channels, channel, "channel", look_up)
        .await
        .unwrap_or((0, None))
}

/// The bot's roles in `guild`, from the cache or its member object. A failed
/// look-up counts as no roles (a role mention is then not addressed) and is
/// tried again after [`DiscordTimings::lookup_retry`].
///
/// [`DiscordTimings::lookup_retry`]: crate::DiscordTimings::lookup_retry
async fn bot_roles(shared: &Shared, guild: u64, bot_id: u64) -> Roles {
    let look_up = async {
        let member = shared.rest.bot_member(guild, bot_id).await?;
        Ok(member.roles.iter().map(|r| r.get()).collect())
    };
    cached(shared, &shared.roles, guild, "bot role", look_up)
        .await
        .unwrap_or_default()
}

/// `cache`'s answer for `key`, else `look_up`'s (bounded by
/// [`DiscordTimings::lookup_timeout`], remembered); `None` when the look-up
/// failed now or a moment ago.
///
/// [`DiscordTimings::lookup_timeout`]: crate::DiscordTimings::lookup_timeout
async fn cached<V, F>(
    shared: &Shared,
    cache: &Lookups<V>,
    key: u64,
    what: &str,
    look_up: F,
) -> Option<V>
where
    V: Clone,
    F: Future<Output = Result<V, RestError>>,
{
    match cache.get(key) {
        Cached::Known(value) => return Some(value),
        Cached::RecentlyFailed => return None,
        Cached::Unknown => {}
    }
    match tokio::time::timeout(shared.config.timings.lookup_timeout, look_up).await {
        Ok(Ok(value)) => {
            cache.learned(key, value.clone());
            Some(value)
        }
        Ok(Err(e)) => {
            tracing::debug!(key, error = %e, "{what} look-up failed; going on without it for now");
            cache.failed(key);
            None
        }
        Err(_) => {
            tracing::debug!(key, "{what} look-up timed out; going on without it for now");
            cache.failed(key);
            None
        }
    }
}
