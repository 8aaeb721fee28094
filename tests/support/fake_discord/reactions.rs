//! Reactions in the fake: the bot's own (`PUT` / `DELETE
//! /channels/{channel.id}/messages/{message.id}/reactions/{emoji}/@me`, the
//! emoji URL-encoded, answered 204; an unknown channel, message or emoji as
//! Discord answers them), and MESSAGE_REACTION_ADD dispatched for every
//! reaction added — the bot's own included, as Discord does — to a session
//! that identified with the reaction intents.

use super::{bot_user_json, shard_of, user_json, FakeDiscord, Inner, Shared};
use serde_json::{json, Value};

/// GUILD_MESSAGE_REACTIONS.
pub const GUILD_REACTIONS: u64 = 1 << 10;
/// DIRECT_MESSAGE_REACTIONS.
pub const DM_REACTIONS: u64 = 1 << 13;

use super::rest::{error, Answer};

/// `PUT` or `DELETE` of the bot's own reaction.
pub(crate) fn own(
    shared: &Shared,
    inner: &mut Inner,
    put: bool,
    (channel, message, emoji): (&str, &str, &str),
) -> Answer {
    let (Ok(channel), Ok(message)) = (channel.parse::<u64>(), message.parse::<u64>()) else {
        return error(404, 10008, "Unknown Message");
    };
    let Some(guild) = inner.channels.get(&channel).map(|c| c.guild) else {
        return error(404, 10003, "Unknown Channel");
    };
    let known = inner
        .messages
        .get(&message)
        .is_some_and(|m| m["channel_id"].as_str() == Some(channel.to_string().as_str()));
    if !known {
        return error(404, 10008, "Unknown Message");
    }
    if emoji.contains(|c: char| !c.is_ascii()) {
        // Clients must URL-encode the emoji.
        return error(400, 50035, "Invalid Form Body");
    }
    let decoded = percent_encoding::percent_decode_str(emoji).decode_utf8_lossy();
    if decoded.is_empty() || decoded.chars().any(|c| c.is_ascii_alphanumeric()) {
        return error(400, 10014, "Unknown Emoji");
    }
    let on = inner.bot_reactions.entry(message).or_default();
    if put {
        if !on.contains(&decoded.to_string()) {
            on.push(decoded.to_string());
            dispatch_add(
                shared,
                inner,
                channel,
                guild,
                message,
                super::BOT_ID,
                &decoded,
            );
        }
    } else {
        on.retain(|e| *e != decoded);
    }
    (204, Value::Null, Vec::new())
}

/// MESSAGE_REACTION_ADD to the channel's shard, if its session asked for
/// reaction events; whether it went out.
fn dispatch_add(
    shared: &Shared,
    inner: &mut Inner,
    channel: u64,
    guild: Option<u64>,
    message: u64,
    user: u64,
    emoji: &str,
) -> bool {
    let shard = shard_of(guild, shared.options.shards);
    let wanted = if guild.is_some() {
        GUILD_REACTIONS
    } else {
        DM_REACTIONS
    };
    let intents = inner
        .identifies
        .iter()
        .rev()
        .find(|i| i.shard[0] == shard && i.token_ok)
        .map_or(0, |i| i.intents);
    if intents & wanted == 0 {
        return false;
    }
    let author = inner
        .messages
        .get(&message)
        .and_then(|m| m["author"]["id"].as_str().map(str::to_owned));
    let mut event = json!({
        "user_id": user.to_string(),
        "channel_id": channel.to_string(),
        "message_id": message.to_string(),
        "emoji": { "id": null, "name": emoji },
        "burst": false,
        "burst_colors": [],
        "type": 0,
    });
    if let Some(author) = author {
        event["message_author_id"] = json!(author);
    }
    if let Some(guild) = guild {
        let user_json = if user == super::BOT_ID {
            bot_user_json()
        } else {
            user_json(user, &format!("user{user}"), false)
        };
        event["guild_id"] = json!(guild.to_string());
        event["member"] = json!({
            "user": user_json, "roles": [], "joined_at": super::timestamp(),
            "deaf": false, "mute": false, "flags": 0,
        });
    }
    super::gateway::dispatch(inner, shard, "MESSAGE_REACTION_ADD", event)
}

impl FakeDiscord {
    /// `user` adds `emoji` to `message`: MESSAGE_REACTION_ADD, when the
    /// message is known and its shard's session asked for reactions.
    pub fn react(&self, message: u64, user: u64, emoji: &str) -> bool {
        let mut inner = self.shared.lock();
        let Some(channel) = inner
            .messages
            .get(&message)
            .and_then(|m| m["channel_id"].as_str()?.parse::<u64>().ok())
        else {
            return false;
        };
        let guild = inner.channels.get(&channel).and_then(|c| c.guild);
        dispatch_add(
            &self.shared,
            &mut inner,
            channel,
            guild,
            message,
            user,
            emoji,
        )
    }

    /// The bot's own reactions on `message` now.
    pub fn bot_reactions(&self, message: u64) -> Vec<String> {
        self.shared
            .lock()
            .bot_reactions
            .get(&message)
            .cloned()
            .unwrap_or_default()
    }

    /// The bot's accepted reaction calls on `message`, in order, as
    /// (`PUT` or `DELETE`, emoji).
    pub fn reaction_calls(&self, message: u64) -> Vec<(String, String)> {
        let prefix = "/channels/";
        self.calls()
            .into_iter()
            .filter(|c| c.status == 204 && c.path.starts_with(prefix))
            .filter_map(|c| {
                let segments: Vec<&str> = c.path.trim_start_matches('/').split('/').collect();
                match segments.as_slice() {
                    ["channels", _, "messages", m, "reactions", e, "@me"]
                        if *m == message.to_string() =>
                    {
                        let e = percent_encoding::percent_decode_str(e).decode_utf8_lossy();
                        Some((c.method.clone(), e.to_string()))
                    }
                    _ => None,
                }
            })
            .collect()
    }
}
