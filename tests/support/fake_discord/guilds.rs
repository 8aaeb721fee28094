//! Guilds as the fake knows them: the bot is in every guild one of its
//! channels belongs to (or where a test gave it roles), and
//! `GET /guilds/{id}/members/{user}` answers the bot's member object.

use super::rest::{error, Answer};
use super::{bot_user_json, timestamp, FakeDiscord, Inner, BOT_ID};
use serde_json::{json, Value};

impl Inner {
    /// Whether the bot is a member of `guild`.
    pub fn bot_in_guild(&self, guild: u64) -> bool {
        self.bot_roles.contains_key(&guild)
            || self.channels.values().any(|c| c.guild == Some(guild))
    }
}

impl FakeDiscord {
    /// Gives the bot `roles` in `guild` (say, the managed role Discord creates
    /// when a bot joins); the bot is in `guild` from now on.
    pub fn give_bot_roles(&self, guild: u64, roles: &[u64]) {
        self.shared.lock().bot_roles.insert(guild, roles.to_vec());
    }

    /// How many times a guild was looked up (`GET /guilds/{id}`).
    pub fn guild_lookups(&self) -> usize {
        self.shared.lock().guild_lookups
    }

    /// The next `times` look-ups of a member of `guild`
    /// (`GET /guilds/{id}/members/{user}`) answer 500, as in an outage.
    pub fn fail_member_lookups(&self, guild: u64, times: usize) {
        *self.shared.lock().member_failures.entry(guild).or_default() += times;
    }
}

/// `GET /guilds/{guild}` (Get Guild): the guild object, for a guild the bot
/// is in, with its boost level.
pub(crate) fn guild(inner: &mut Inner, guild: &str) -> Answer {
    let Some(guild) = guild.parse::<u64>().ok().filter(|g| inner.bot_in_guild(*g)) else {
        return error(404, 10004, "Unknown Guild");
    };
    inner.guild_lookups += 1;
    let tier = inner
        .upload_limits
        .get(&guild)
        .map_or(0, |(level, _)| *level);
    let boosts = [0, 2, 7, 14][usize::from(tier)];
    let body = json!({
        "id": guild.to_string(),
        "name": format!("guild-{guild}"),
        "icon": null,
        "splash": null,
        "discovery_splash": null,
        "owner_id": "1300000000000000999",
        "afk_channel_id": null,
        "afk_timeout": 300,
        "verification_level": 1,
        "default_message_notifications": 1,
        "explicit_content_filter": 2,
        "roles": [],
        "emojis": [],
        "features": [],
        "mfa_level": 0,
        "application_id": null,
        "system_channel_id": null,
        "system_channel_flags": 0,
        "rules_channel_id": null,
        "vanity_url_code": null,
        "description": null,
        "banner": null,
        "premium_tier": tier,
        "premium_subscription_count": boosts,
        "preferred_locale": "en-US",
        "public_updates_channel_id": null,
        "nsfw_level": 0,
        "premium_progress_bar_enabled": false,
    });
    (200, body, Vec::new())
}

/// `GET /guilds/{guild}/members/{user}`: the fake knows one member per guild,
/// the bot. `@me` is only a PATCH target on Discord (Modify Current Member).
pub(crate) fn member(inner: &mut Inner, guild: &str, user: &str) -> Answer {
    if user == "@me" {
        return error(405, 0, "405: Method Not Allowed");
    }
    let Some(guild) = guild.parse::<u64>().ok().filter(|g| inner.bot_in_guild(*g)) else {
        return error(404, 10004, "Unknown Guild");
    };
    if let Some(left) = inner.member_failures.get_mut(&guild) {
        if *left > 0 {
            *left -= 1;
            return error(500, 0, "500: Internal Server Error");
        }
    }
    if user.parse::<u64>().ok() != Some(BOT_ID) {
        return error(404, 10007, "Unknown Member");
    }
    let roles = inner.bot_roles.get(&guild).cloned().unwrap_or_default();
    (200, member_json(&roles), Vec::new())
}

/// A guild member object as Discord sends it.
fn member_json(roles: &[u64]) -> Value {
    json!({
        "user": bot_user_json(),
        "nick": null,
        "avatar": null,
        "banner": null,
        "roles": roles.iter().map(u64::to_string).collect::<Vec<_>>(),
        "joined_at": timestamp(),
        "premium_since": null,
        "deaf": false,
        "mute": false,
        "flags": 0,
        "pending": false,
        "communication_disabled_until": null,
    })
}
