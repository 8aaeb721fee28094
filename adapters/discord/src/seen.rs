//! The newest messages seen per channel in this process, so a new gateway
//! session knows where each channel's missed messages start.
//!
//! Channels with a message seen in this process are known, and at start
//! those whose marks the previous process left on disk (`marks.rs`). Each
//! channel keeps its last few message ids with the instant they
//! reached us. The floor of a backfill is the newest id that reached us
//! before `cutoff` (a moment before the new session's READY was handled): a
//! message of the new session whose handler ran before READY's (serenity
//! spawns each event's handler) must not hide older missed ones. An id
//! fetched again because of that margin is dropped by the pump's memory of
//! delivered ids.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// Ids kept per channel.
const PER_CHANNEL: usize = 8;
/// Channels kept; past this the least recently active quarter is forgotten.
const MAX_CHANNELS: usize = 20_000;
/// Discord's epoch (2015-01-01) in Unix milliseconds.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

/// Where a channel's backfill starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Floor {
    pub channel: u64,
    /// `None` for a DM channel.
    pub guild: Option<u64>,
    /// Fetch the messages after this id.
    pub after: u64,
}

struct Track {
    guild: Option<u64>,
    /// `(id, reached us)`, ascending by id.
    recent: VecDeque<(u64, Instant)>,
}

impl Track {
    fn newest(&self) -> u64 {
        self.recent.back().map_or(0, |(id, _)| *id)
    }

    fn floor(&self, cutoff: Instant) -> Option<u64> {
        let before = self
            .recent
            .iter()
            .filter(|(_, at)| *at <= cutoff)
            .map(|(id, _)| *id)
            .max();
        // All of them reached us lately: the oldest is still at most the
        // last one of the earlier session (ids grow), unless more than
        // PER_CHANNEL of the new session were handled before READY.
        before.or_else(|| self.recent.front().map(|(id, _)| *id))
    }
}

/// Recent message ids per channel; shared by the event handlers.
#[derive(Default)]
pub(crate) struct Seen {
    channels: Mutex<HashMap<u64, Track>>,
}

impl Seen {
    /// Message `id` of `channel` (in `guild`) reached us `now`.
    pub fn saw(&self, channel: u64, guild: Option<u64>, id: u64, now: Instant) {
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        let track = channels.entry(channel).or_insert_with(|| Track {
            guild,
            recent: VecDeque::new(),
        });
        if guild.is_some() {
            track.guild = guild;
        }
        if !track.recent.iter().any(|(seen, _)| *seen == id) {
            let at = track.recent.partition_point(|(seen, _)| *seen < id);
            track.recent.insert(at, (id, now));
            while track.recent.len() > PER_CHANNEL {
                track.recent.pop_front();
            }
        }
        if channels.len() > MAX_CHANNELS {
            forget_least_active(&mut channels, MAX_CHANNELS * 3 / 4);
        }
    }

    /// The guild of `channel`, when a message from it was seen (`None` for a
    /// DM channel or one not seen lately).
    pub fn guild_of(&self, channel: u64) -> Option<u64> {
        let channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        channels.get(&channel).and_then(|t| t.guild)
    }

    /// The floors of at most `max` channels whose newest message is at or
    /// after snowflake `active_since` and whose guild `wanted` accepts, the
    /// most recently active first.
    pub fn floors(
        &self,
        wanted: impl Fn(Option<u64>) -> bool,
        cutoff: Instant,
        active_since: u64,
        max: usize,
    ) -> Vec<Floor> {
        let channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        let mut active: Vec<(u64, Floor)> = channels
            .iter()
            .filter(|(_, t)| t.newest() >= active_since && wanted(t.guild))
            .filter_map(|(channel, t)| {
                let after = t.floor(cutoff)?;
                let floor = Floor {
                    channel: *channel,
                    guild: t.guild,
                    after,
                };
                Some((t.newest(), floor))
            })
            .collect();
        active.sort_unstable_by_key(|a| std::cmp::Reverse(a.0));
        active.into_iter().take(max).map(|(_, f)| f).collect()
    }
}

fn forget_least_active(channels: &mut HashMap<u64, Track>, keep: usize) {
    let mut newest: Vec<u64> = channels.values().map(Track::newest).collect();
    newest.sort_unstable_by_key(|n| std::cmp::Reverse(*n));
    if let Some(&threshold) = newest.get(keep) {
        channels.retain(|_, t| t.newest() > threshold);
    }
}

/// The smallest snowflake Discord could have created at `at`.
pub(crate) fn snowflake_at(at: SystemTime) -> u64 {
    let ms = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis();
    let ms = u64::try_from(ms).unwrap_or(u64::MAX);
    ms.saturating_sub(DISCORD_EPOCH_MS) << 22
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_floor_is_the_newest_id_that_reached_us_before_the_cutoff() {
        let seen = Seen::default();
        let t0 = Instant::now();
        seen.saw(1, Some(9), 10, t0);
        seen.saw(1, Some(9), 30, t0 + MS);
        // Handled out of order: the older one still counts.
        seen.saw(1, Some(9), 20, t0 + 2 * MS);
        // The new session's first message, handled before READY's handler.
        seen.saw(1, Some(9), 50, t0 + 100 * MS);
        let floors = seen.floors(|_| true, t0 + 10 * MS, 0, 10);
        assert_eq!(
            floors,
            [Floor {
                channel: 1,
                guild: Some(9),
                after: 30
            }]
        );
        // Everything reached us after the cutoff: the oldest one.
        assert_eq!(seen.floors(|_| true, t0 - MS, 0, 10)[0].after, 10);
    }

    #[test]
    fn only_recently_active_wanted_channels_count_newest_first() {
        let seen = Seen::default();
        let t0 = Instant::now();
        seen.saw(1, Some(9), 100, t0);
        seen.saw(2, None, 300, t0);
        seen.saw(3, Some(8), 200, t0);
        seen.saw(4, Some(9), 5, t0);
        let channels = |floors: Vec<Floor>| floors.iter().map(|f| f.channel).collect::<Vec<_>>();
        let later = t0 + MS;
        assert_eq!(channels(seen.floors(|_| true, later, 50, 10)), [2, 3, 1]);
        assert_eq!(channels(seen.floors(|_| true, later, 50, 2)), [2, 3]);
        assert_eq!(
            channels(seen.floors(|g| g == Some(9), later, 0, 10)),
            [1, 4]
        );
    }

    #[test]
    fn a_channel_keeps_its_newest_ids() {
        let seen = Seen::default();
        let t0 = Instant::now();
        for id in 1..=20 {
            seen.saw(1, None, id, t0);
        }
        seen.saw(1, None, 3, t0);
        let floors = seen.floors(|_| true, t0 - MS, 0, 1);
        assert_eq!(floors[0].after, 20 - PER_CHANNEL as u64 + 1);
    }

    #[test]
    fn the_least_active_channels_are_forgotten_past_the_limit() {
        let mut channels = HashMap::new();
        for channel in 1..=8_u64 {
            let recent = VecDeque::from([(channel * 10, Instant::now())]);
            channels.insert(
                channel,
                Track {
                    guild: None,
                    recent,
                },
            );
        }
        forget_least_active(&mut channels, 6);
        let mut kept: Vec<u64> = channels.keys().copied().collect();
        kept.sort_unstable();
        assert_eq!(kept, [3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn snowflakes_carry_discord_milliseconds() {
        let at = UNIX_EPOCH + Duration::from_millis(DISCORD_EPOCH_MS + 1_000);
        assert_eq!(snowflake_at(at), 1_000 << 22);
        assert_eq!(snowflake_at(UNIX_EPOCH), 0);
    }
}
