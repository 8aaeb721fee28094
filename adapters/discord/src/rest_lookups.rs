//! Look-ups: the bot's own user, a channel's kind and parent, the bot's
//! roles in a guild and a guild's boost level.

use crate::errors::RestError;
use crate::rest::{decode, nz, Lane, Rest};
use serde::Deserialize;
use serenity::http::{LightMethod, Route};
use serenity::model::id::{ChannelId, GuildId, RoleId, UserId};

/// The bot's own user, from `GET /users/@me`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BotUser {
    pub id: UserId,
    pub username: String,
}

/// What the adapter needs to know about a channel.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct ChannelInfo {
    #[serde(rename = "type")]
    pub kind: u8,
    #[serde(default)]
    pub parent_id: Option<ChannelId>,
}

impl ChannelInfo {
    /// Public, private and announcement threads.
    pub fn is_thread(&self) -> bool {
        matches!(self.kind, 10..=12)
    }
}

/// The bot's own guild member, from `GET /guilds/{guild}/members/{bot}`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BotMember {
    pub roles: Vec<RoleId>,
}

impl Rest {
    pub async fn current_user(&self) -> Result<BotUser, RestError> {
        self.call(Lane::Lookup, LightMethod::Get, Route::UserMe, None)
            .await
            .and_then(decode)
    }

    pub async fn channel(&self, channel: u64) -> Result<ChannelInfo, RestError> {
        let channel_id = ChannelId::from(nz(channel)?);
        self.call(
            Lane::Lookup,
            LightMethod::Get,
            Route::Channel { channel_id },
            None,
        )
        .await
        .and_then(decode)
    }

    /// The bot's member object in `guild` (Get Guild Member with the bot's own
    /// id: the documented read; `members/@me` is only for PATCH).
    pub async fn bot_member(&self, guild: u64, bot: u64) -> Result<BotMember, RestError> {
        let route = Route::GuildMember {
            guild_id: GuildId::from(nz(guild)?),
            user_id: UserId::from(nz(bot)?),
        };
        self.call(Lane::Lookup, LightMethod::Get, route, None)
            .await
            .and_then(decode)
    }

    /// `guild`'s boost level (Get Guild): it sets the guild's file limit.
    pub async fn guild_tier(&self, guild: u64) -> Result<u8, RestError> {
        #[derive(Deserialize)]
        struct Tier {
            premium_tier: u8,
        }
        let route = Route::Guild {
            guild_id: GuildId::from(nz(guild)?),
        };
        let tier: Tier = self
            .call(Lane::Background, LightMethod::Get, route, None)
            .await
            .and_then(decode)?;
        Ok(tier.premium_tier)
    }
}
