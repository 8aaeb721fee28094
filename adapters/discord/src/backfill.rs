//! Messages posted while no gateway session existed, fetched over REST.
//!
//! A resumed session gets its missed events replayed by Discord; a new one
//! (INVALID_SESSION that cannot be resumed, close codes 4007/4009, a zombie
//! connection, a gateway away for too long) does not. So after the READY of
//! a shard's new session that follows an earlier one in this process, each
//! channel of that shard with a message seen in the last [`ACTIVE_WITHIN`]
//! (at most [`MAX_CHANNELS`], the most recently active first) is read with
//! `GET /channels/{id}/messages?after={last seen}&limit=100`, page by page
//! (at most [`MAX_PAGES`]), oldest first, and each message goes to the pump
//! like a gateway MESSAGE_CREATE: the same filters, addressing and order.
//! The pump drops a message it already delivered (one posted after READY
//! arrives both ways). A channel the bot can no longer read (403, 404) is
//! skipped with a warning. Calls go through the pacer on their own lane.

use crate::adapter::Shared;
use crate::errors::RestError;
use crate::gateway::Queued;
use crate::rest::{nz, retry_of, Lane, Rest, HTTP_TIMEOUT};
use crate::seen::{snowflake_at, Floor};
use serde_json::Value;
use serenity::http::{LightMethod, Request, Route};
use serenity::model::channel::Message;
use serenity::model::id::{ChannelId, GuildId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Channels whose last seen message is older than this are not read.
pub(crate) const ACTIVE_WITHIN: Duration = Duration::from_secs(24 * 3600);
/// At most this many channels are read per new session.
pub(crate) const MAX_CHANNELS: usize = 50;
/// Messages per page: Discord's maximum `limit`.
pub(crate) const PAGE: usize = 100;
/// At most this many pages per channel (500 messages); the rest is skipped.
pub(crate) const MAX_PAGES: usize = 5;
/// Messages delivered by a backfill, at most: the pump remembers at least
/// this many delivered ids (plus live traffic) to drop a second copy.
pub(crate) const MAX_MESSAGES: usize = MAX_CHANNELS * MAX_PAGES * PAGE;
/// A message that reached us this shortly before READY was handled may be
/// of the new session (serenity handles events on spawned tasks).
const READY_MARGIN: Duration = Duration::from_secs(2);

/// Which shards had a session, and the backfill running for each.
#[derive(Default)]
pub(crate) struct Sessions {
    running: Mutex<HashMap<u32, CancellationToken>>,
}

impl Sessions {
    /// The previous process had sessions on `shards`: their first session
    /// here is a new one after those, and backfills.
    pub fn carry_over(&self, shards: impl IntoIterator<Item = u32>) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        for shard in shards {
            running.entry(shard).or_default();
        }
    }

    /// A READY on `shard`: `Some(token)` for a new backfill when the shard
    /// had a session before (whose backfill, if still running, is stopped).
    pub fn ready(&self, shard: u32, shutdown: &CancellationToken) -> Option<CancellationToken> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let token = shutdown.child_token();
        let earlier = running.insert(shard, token.clone())?;
        earlier.cancel();
        Some(token)
    }
}

/// The floors for a new session of `shard` (of `total`), taken now.
pub(crate) fn floors(shared: &Shared, shard: u32, total: u32) -> Vec<Floor> {
    let active_since = snowflake_at(SystemTime::now() - ACTIVE_WITHIN);
    let cutoff = Instant::now()
        .checked_sub(READY_MARGIN)
        .unwrap_or_else(Instant::now);
    let total = u64::from(total.max(1));
    let ours = |guild: Option<u64>| match guild {
        Some(guild) => (guild >> 22) % total == u64::from(shard),
        None => shard == 0, // DMs go to shard 0
    };
    shared.seen.floors(ours, cutoff, active_since, MAX_CHANNELS)
}

/// Reads each floor's channel and queues what it missed, until `stop`.
pub(crate) async fn run(
    shared: Arc<Shared>,
    floors: Vec<Floor>,
    queue: mpsc::Sender<Queued>,
    stop: CancellationToken,
) {
    if floors.is_empty() {
        return;
    }
    tracing::info!(
        channels = floors.len(),
        "new Discord gateway session: fetching the messages posted meanwhile"
    );
    let work = async {
        let mut delivered = 0;
        for floor in floors {
            match channel(&shared, floor, &queue).await {
                Ok(n) => delivered += n,
                Err(Stop::Closed) => return delivered,
                Err(Stop::Refused(e)) => tracing::warn!(
                    channel = floor.channel,
                    error = %e,
                    "could not read a Discord channel's history; its missed messages are skipped"
                ),
            }
        }
        delivered
    };
    tokio::select! {
        delivered = work => tracing::info!(delivered, "Discord backfill done"),
        () = stop.cancelled() => tracing::debug!("Discord backfill stopped"),
    }
}

enum Stop {
    /// The pump is gone.
    Closed,
    Refused(RestError),
}

/// Pages through one channel after its floor; returns the messages queued.
async fn channel(
    shared: &Shared,
    floor: Floor,
    queue: &mpsc::Sender<Queued>,
) -> Result<usize, Stop> {
    let mut after = floor.after;
    let mut queued = 0;
    for _ in 0..MAX_PAGES {
        let page = shared
            .rest
            .messages_after(floor.channel, after, PAGE)
            .await
            .map_err(Stop::Refused)?;
        let full = page.len() >= PAGE;
        let Some(newest) = page.iter().filter_map(snowflake).max() else {
            return Ok(queued);
        };
        for mut message in oldest_first(page) {
            // REST messages carry no guild id; the gateway's did.
            message.guild_id = floor.guild.and_then(|g| nz(g).ok()).map(GuildId::from);
            let (id, channel) = (message.id.get(), message.channel_id.get());
            if message.author.bot {
                continue;
            }
            let event = Queued::message(message);
            queue.send(event).await.map_err(|_| Stop::Closed)?;
            shared.seen.saw(channel, floor.guild, id, Instant::now());
            queued += 1;
        }
        after = newest;
        if !full {
            return Ok(queued);
        }
    }
    tracing::warn!(
        channel = floor.channel,
        max = MAX_PAGES * PAGE,
        "more messages were missed in a Discord channel than a backfill reads; the newer ones are skipped"
    );
    Ok(queued)
}

fn snowflake(message: &Value) -> Option<u64> {
    message["id"].as_str()?.parse().ok()
}

/// The page's messages, oldest first; one that does not read as a message
/// is skipped (logged).
fn oldest_first(page: Vec<Value>) -> Vec<Message> {
    let mut messages: Vec<Message> = page
        .into_iter()
        .filter_map(|m| match serde_json::from_value::<Message>(m) {
            Ok(message) => Some(message),
            Err(e) => {
                tracing::warn!(error = %e, "skipping a fetched Discord message that does not read as one");
                None
            }
        })
        .collect();
    messages.sort_unstable_by_key(|m| m.id);
    messages
}

impl Rest {
    /// `GET /channels/{channel}/messages?after={after}&limit={limit}`: the
    /// `limit` messages right after `after`, newest first, as JSON.
    pub async fn messages_after(
        &self,
        channel: u64,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Value>, RestError> {
        let channel_id = ChannelId::from(nz(channel)?);
        let params = vec![("after", after.to_string()), ("limit", limit.to_string())];
        let page = self
            .pacer
            .run(
                &Lane::Backfill,
                || {
                    let request =
                        Request::new(Route::ChannelMessages { channel_id }, LightMethod::Get)
                            .params(Some(params.clone()));
                    self.exchange(request, HTTP_TIMEOUT)
                },
                retry_of,
            )
            .await?;
        match page {
            Value::Array(messages) => Ok(messages),
            _ => Err(RestError::Decode("a message list was expected".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_shard_that_had_a_session_backfills_and_once_at_a_time() {
        let sessions = Sessions::default();
        let shutdown = CancellationToken::new();
        assert!(sessions.ready(0, &shutdown).is_none(), "the first session");
        assert!(
            sessions.ready(1, &shutdown).is_none(),
            "another shard's first"
        );
        let first = sessions.ready(0, &shutdown).expect("a new session");
        let second = sessions.ready(0, &shutdown).expect("yet another");
        assert!(first.is_cancelled(), "the earlier backfill stops");
        assert!(!second.is_cancelled());
        shutdown.cancel();
        assert!(second.is_cancelled(), "shutdown stops it");
    }
}
