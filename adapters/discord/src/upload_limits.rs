//! How large a message's files may be, per place. Discord reports the limit
//! of the place an interaction came from (`attachment_size_limit`: boosts
//! raise it to 50 or 100 MiB); until one came from a guild, its channels get
//! the 10 MiB every server allows.

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
}
