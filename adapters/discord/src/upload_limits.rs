//! How large a message's files may be, per place. Discord reports the limit
//! of the place an interaction came from (`attachment_size_limit`: boosts
//! raise it to 50 or 100 MiB); before that, a guild's boost level (looked up
//! once, when its first message arrives) gives it; until either is known,
//! its channels get the 10 MiB every server allows.

use std::collections::HashMap;
use std::sync::Mutex;

/// Discord's limit on the files of one message in a server without boosts
/// (and in DMs).
pub(crate) const DEFAULT_UPLOAD_BYTES: usize = 10 << 20;
/// Places remembered; past this the map starts over (each refills from the
/// next interaction there, and the default is always safe).
const MAX_PLACES: usize = 20_000;

/// Where a limit holds: a whole guild, or one DM channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Place {
    Guild(u64),
    Dm(u64),
}

impl Place {
    fn of(guild: Option<u64>, channel: u64) -> Place {
        guild.map_or(Place::Dm(channel), Place::Guild)
    }
}

/// The limits Discord reported, by place.
#[derive(Debug, Default)]
pub(crate) struct UploadLimits {
    known: Mutex<Known>,
}

#[derive(Debug, Default)]
struct Known {
    reported: HashMap<Place, usize>,
    /// The guild of each channel an interaction came from.
    guild_of: HashMap<u64, u64>,
    /// Guilds whose boost level was looked up (or is being).
    looked_up: std::collections::HashSet<u64>,
}

/// A boost level's file limit (levels 0 and 1: the default).
pub(crate) fn tier_limit(tier: u8) -> usize {
    match tier {
        2 => 50 << 20,
        3 => 100 << 20,
        _ => DEFAULT_UPLOAD_BYTES,
    }
}

impl UploadLimits {
    /// An interaction in `channel` (of `guild`) reported `bytes`.
    pub fn reported(&self, guild: Option<u64>, channel: u64, bytes: u32) {
        if bytes == 0 {
            return; // an older payload without the field
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.reported.len() >= MAX_PLACES || known.guild_of.len() >= MAX_PLACES {
            *known = Known::default();
        }
        known
            .reported
            .insert(Place::of(guild, channel), bytes as usize);
        if let Some(guild) = guild {
            known.guild_of.insert(channel, guild);
        }
    }

    /// Whether `guild`'s boost level is still to be looked up (true once).
    pub fn first_look(&self, guild: u64) -> bool {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.looked_up.len() >= MAX_PLACES {
            known.looked_up.clear();
        }
        known.looked_up.insert(guild)
    }

    /// `guild` is at boost level `tier`; an interaction's report, the
    /// exact figure, is kept over it.
    pub fn boosted(&self, guild: u64, tier: u8) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known
            .reported
            .entry(Place::Guild(guild))
            .or_insert(tier_limit(tier));
    }

    /// The limit in `channel` (of `guild`, when a message said; else the
    /// guild an interaction there named).
    pub fn limit(&self, guild: Option<u64>, channel: u64) -> usize {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let guild = guild.or_else(|| known.guild_of.get(&channel).copied());
        known
            .reported
            .get(&Place::of(guild, channel))
            .copied()
            .unwrap_or(DEFAULT_UPLOAD_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reported_limit_holds_for_its_guild_or_its_dm_only() {
        let limits = UploadLimits::default();
        assert_eq!(limits.limit(Some(1), 10), DEFAULT_UPLOAD_BYTES);
        limits.reported(Some(1), 10, 50 << 20);
        assert_eq!(
            limits.limit(Some(1), 11),
            50 << 20,
            "another channel of the guild"
        );
        assert_eq!(
            limits.limit(None, 10),
            50 << 20,
            "the channel's guild from the interaction"
        );
        assert_eq!(limits.limit(Some(2), 12), DEFAULT_UPLOAD_BYTES);
        assert_eq!(limits.limit(None, 12), DEFAULT_UPLOAD_BYTES);
        limits.reported(None, 20, 25 << 20);
        assert_eq!(limits.limit(None, 20), 25 << 20);
        limits.reported(Some(1), 10, 0);
        assert_eq!(
            limits.limit(Some(1), 10),
            50 << 20,
            "a missing field changes nothing"
        );
    }

    #[test]
    fn a_boost_level_sets_a_guilds_limit_unless_an_interaction_did() {
        let limits = UploadLimits::default();
        assert!(
            limits.first_look(7) && !limits.first_look(7),
            "looked up once"
        );
        limits.boosted(7, 3);
        assert_eq!(limits.limit(Some(7), 70), 100 << 20);
        limits.reported(Some(8), 80, 50 << 20);
        limits.boosted(8, 1);
        assert_eq!(
            limits.limit(Some(8), 80),
            50 << 20,
            "the interaction's figure stays"
        );
        limits.boosted(9, 1);
        assert_eq!(limits.limit(Some(9), 90), DEFAULT_UPLOAD_BYTES);
    }
}
