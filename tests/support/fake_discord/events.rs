//! Events the fake dispatches on its gateway: user messages (MESSAGE_CREATE),
//! button presses (INTERACTION_CREATE), raw frames and dropped connections.

use super::{bot_user_json, custom_ids, gateway, message_json, shard_of, timestamp, user_json};
use super::{Channel, FakeDiscord, Inner, Interaction, APP_ID, BOT_ID, GUILD_ID, TEXT};
use serde_json::{json, Value};
use std::time::Instant;

/// A user message to dispatch as MESSAGE_CREATE.
#[derive(Debug, Clone)]
pub struct UserMessage {
    pub channel: u64,
    pub author: u64,
    pub name: String,
    pub bot: bool,
    pub content: String,
    pub reply_to: Option<u64>,
    pub roles: Vec<u64>,
    pub files: Vec<super::FakeFile>,
}

impl UserMessage {
    pub fn new(channel: u64, author: u64, content: impl Into<String>) -> Self {
        Self {
            channel,
            author,
            name: format!("user{author}"),
            bot: false,
            content: content.into(),
            reply_to: None,
            roles: Vec::new(),
            files: Vec::new(),
        }
    }

    /// Attaches `file` (hosted on the fake CDN).
    pub fn with_file(mut self, file: super::FakeFile) -> Self {
        self.files.push(file);
        self
    }

    /// Prefixes `<@BOT_ID>` (and lists the bot in `mentions`).
    pub fn mentioning_bot(mut self) -> Self {
        self.content = format!("<@{BOT_ID}> {}", self.content);
        self
    }

    /// Prefixes `<@&role>` (and, in a guild, lists the role in `mention_roles`),
    /// as when autocomplete offers the bot's managed role for "@BotName".
    pub fn mentioning_role(mut self, role: u64) -> Self {
        self.content = format!("<@&{role}> {}", self.content);
        self
    }

    pub fn replying_to(mut self, message: u64) -> Self {
        self.reply_to = Some(message);
        self
    }

    pub fn with_roles(mut self, roles: &[u64]) -> Self {
        self.roles = roles.to_vec();
        self
    }

    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    pub fn by_a_bot(mut self) -> Self {
        self.bot = true;
        self
    }
}

/// A button press to dispatch as INTERACTION_CREATE.
#[derive(Debug, Clone)]
pub struct Press {
    pub message: u64,
    pub custom_id: String,
    pub user: u64,
    pub roles: Vec<u64>,
    /// Delivered this long after Discord created it (say, replayed after a
    /// reconnect): its 3 s are partly gone on arrival.
    pub late: Option<std::time::Duration>,
}

impl Press {
    pub fn new(message: u64, custom_id: impl Into<String>, user: u64) -> Self {
        Self {
            message,
            custom_id: custom_id.into(),
            user,
            roles: Vec::new(),
            late: None,
        }
    }

    pub fn delivered_late(mut self, by: std::time::Duration) -> Self {
        self.late = Some(by);
        self
    }

    pub fn with_roles(mut self, roles: &[u64]) -> Self {
        self.roles = roles.to_vec();
        self
    }
}

impl FakeDiscord {
    /// Dispatches MESSAGE_CREATE to the shard owning the channel; returns the
    /// message id, or `None` when that shard has no session (never identified,
    /// or invalidated: Discord delivers it to no one). While the session is
    /// disconnected the event waits for a resume to replay it. Unknown
    /// channels become text channels of the default guild.
    pub fn send_message(&self, message: UserMessage) -> Option<u64> {
        let mut inner = self.shared.lock();
        self.send_message_locked(&mut inner, message)
    }

    /// [`FakeDiscord::send_message`] under a lock the caller holds.
    pub(crate) fn send_message_locked(
        &self,
        inner: &mut Inner,
        message: UserMessage,
    ) -> Option<u64> {
        let channel = *inner.channels.entry(message.channel).or_insert(Channel {
            kind: TEXT,
            guild: Some(GUILD_ID),
            parent: None,
        });
        let id = inner.next_id();
        let mentions: Vec<Value> = mentioned_ids(&message.content)
            .into_iter()
            .map(|uid| {
                if uid == BOT_ID {
                    bot_user_json()
                } else {
                    user_json(uid, &format!("user{uid}"), false)
                }
            })
            .collect();
        let mut msg = message_json(
            id,
            message.channel,
            channel.guild,
            user_json(message.author, &message.name, message.bot),
            &message.content,
            json!([]),
        );
        msg["mentions"] = json!(mentions);
        let files: Vec<Value> = message
            .files
            .into_iter()
            .map(|f| super::cdn::host(inner, &self.shared.api_url, message.channel, f))
            .collect();
        if files.iter().any(|f| f.get("waveform").is_some()) {
            msg["flags"] = json!(1 << 13); // IS_VOICE_MESSAGE
        }
        msg["attachments"] = Value::Array(files);
        if message.reply_to.is_some() {
            msg["type"] = json!(19);
        }
        if channel.guild.is_some() {
            msg["mention_roles"] = json!(mentioned_roles(&message.content)
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>());
            msg["member"] = json!({
                "roles": message.roles.iter().map(u64::to_string).collect::<Vec<_>>(),
                "joined_at": timestamp(),
                "deaf": false,
                "mute": false,
                "flags": 0,
            });
        }
        if let Some(reply_to) = message.reply_to {
            attach_reference(inner, &mut msg, message.channel, channel.guild, reply_to);
        }
        inner.messages.insert(id, msg.clone());
        inner.order.push(id);
        let shard = shard_of(channel.guild, self.shared.options.shards);
        gateway::dispatch(inner, shard, "MESSAGE_CREATE", msg).then_some(id)
    }

    /// Dispatches INTERACTION_CREATE for a button on a stored message; returns
    /// the interaction id, or `None` when the message is unknown, does not
    /// carry a button with that `custom_id` now (Discord only sends what is on
    /// the message) or the shard is not connected.
    pub fn press(&self, press: Press) -> Option<u64> {
        let mut inner = self.shared.lock();
        let message = inner.messages.get(&press.message)?.clone();
        if !custom_ids(&message).contains(&press.custom_id) {
            return None;
        }
        let channel_id: u64 = message["channel_id"].as_str()?.parse().ok()?;
        let channel = *inner.channels.get(&channel_id)?;
        let id = match press.late {
            Some(ago) => inner.id_created_ago(ago),
            None => inner.next_id(),
        };
        let token = format!("interaction-token-{id}");
        let mut interaction = envelope(id, &token, channel_id, channel, press.user, &press.roles);
        interaction["attachment_size_limit"] = json!(inner.upload_limit(channel_id));
        interaction["type"] = json!(3);
        interaction["data"] = json!({ "custom_id": press.custom_id, "component_type": 2 });
        interaction["message"] = message;
        inner.interactions.insert(
            id,
            Interaction {
                token,
                message: press.message,
                channel: channel_id,
                created: created(press.late),
                acked: None,
                kind: super::COMPONENT,
                user: press.user,
                roles: press.roles.clone(),
                modal: None,
            },
        );
        let shard = shard_of(channel.guild, self.shared.options.shards);
        gateway::dispatch(&mut inner, shard, "INTERACTION_CREATE", interaction).then_some(id)
    }

    /// Dispatches INTERACTION_CREATE for a slash command (type 2) used by
    /// `user` in `channel`, with its `input` option when given; returns the
    /// interaction id, or `None` when no such command is registered (Discord
    /// only offers registered ones) or the shard is not connected.
    pub fn slash(&self, channel: u64, user: u64, name: &str, input: Option<&str>) -> Option<u64> {
        let mut inner = self.shared.lock();
        let command = inner.commands.iter().find(|c| c["name"] == name)?.clone();
        let channel_info = *inner.channels.entry(channel).or_insert(Channel {
            kind: TEXT,
            guild: Some(GUILD_ID),
            parent: None,
        });
        let id = inner.next_id();
        let token = format!("interaction-token-{id}");
        let mut data = json!({ "id": command["id"], "name": name, "type": 1 });
        if let Some(input) = input {
            data["options"] = json!([{ "name": "input", "type": 3, "value": input }]);
        }
        let mut interaction = envelope(id, &token, channel, channel_info, user, &[]);
        interaction["attachment_size_limit"] = json!(inner.upload_limit(channel));
        interaction["type"] = json!(2);
        interaction["data"] = data;
        interaction["app_permissions"] = json!("0");
        inner.interactions.insert(
            id,
            Interaction {
                token,
                message: 0,
                channel,
                created: Instant::now(),
                acked: None,
                kind: super::COMMAND,
                user,
                roles: Vec::new(),
                modal: None,
            },
        );
        let shard = shard_of(channel_info.guild, self.shared.options.shards);
        gateway::dispatch(&mut inner, shard, "INTERACTION_CREATE", interaction).then_some(id)
    }

    /// Sends `text` as is on `shard`'s connection (malformed payload tests).
    pub fn send_raw(&self, shard: u32, text: &str) -> bool {
        let inner = self.shared.lock();
        gateway::send(&inner, shard, gateway::Out::Frame(text.to_owned()))
    }

    /// Drops `shard`'s TCP connection without a close frame (the client resumes).
    pub fn drop_connection(&self, shard: u32) -> bool {
        let inner = self.shared.lock();
        gateway::send(&inner, shard, gateway::Out::Drop)
    }
}

/// When an interaction delivered `late` was created.
pub(crate) fn created(late: Option<std::time::Duration>) -> Instant {
    let now = Instant::now();
    late.and_then(|ago| now.checked_sub(ago)).unwrap_or(now)
}

/// User ids in `<@id>` / `<@!id>` mentions.
fn mentioned_ids(content: &str) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut rest = content;
    while let Some(start) = rest.find("<@") {
        rest = &rest[start + 2..];
        let digits = rest.strip_prefix('!').unwrap_or(rest);
        if let Some(end) = digits.find('>') {
            if let Ok(id) = digits[..end].parse::<u64>() {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    ids
}

/// Role ids in `<@&id>` mentions.
fn mentioned_roles(content: &str) -> Vec<u64> {
    let mut ids = Vec::new();
    for (at, _) in content.match_indices("<@&") {
        let rest = &content[at + 3..];
        let id = rest
            .find('>')
            .and_then(|end| rest[..end].parse::<u64>().ok());
        if let Some(id) = id.filter(|id| !ids.contains(id)) {
            ids.push(id);
        }
    }
    ids
}

/// Adds `message_reference` and (when known) `referenced_message` to `msg`.
pub(crate) fn attach_reference(
    inner: &Inner,
    msg: &mut Value,
    channel: u64,
    guild: Option<u64>,
    reply_to: u64,
) {
    let mut reference = json!({
        "message_id": reply_to.to_string(),
        "channel_id": channel.to_string(),
    });
    if let Some(guild) = guild {
        reference["guild_id"] = json!(guild.to_string());
    }
    msg["message_reference"] = reference;
    if let Some(referenced) = inner.messages.get(&reply_to) {
        let mut referenced = referenced.clone();
        if let Some(map) = referenced.as_object_mut() {
            map.remove("referenced_message");
        }
        msg["referenced_message"] = referenced;
    }
}

/// The fields every INTERACTION_CREATE carries: ids, token, channel, locale,
/// and the user — as a guild member in a guild, as `user` in a DM.
pub(crate) fn envelope(
    id: u64,
    token: &str,
    channel_id: u64,
    channel: Channel,
    user: u64,
    roles: &[u64],
) -> Value {
    let mut channel_json = json!({
        "id": channel_id.to_string(),
        "type": channel.kind,
        "name": format!("channel-{channel_id}"),
    });
    if let Some(parent) = channel.parent {
        channel_json["parent_id"] = json!(parent.to_string());
    }
    let mut interaction = json!({
        "id": id.to_string(),
        "application_id": APP_ID.to_string(),
        "channel_id": channel_id.to_string(),
        "channel": channel_json,
        "token": token,
        "version": 1,
        "locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {},
    });
    let user = user_json(user, &format!("user{user}"), false);
    match channel.guild {
        Some(guild) => {
            interaction["guild_id"] = json!(guild.to_string());
            interaction["guild_locale"] = json!("en-US");
            interaction["context"] = json!(0);
            interaction["member"] = json!({
                "user": user,
                "roles": roles.iter().map(u64::to_string).collect::<Vec<_>>(),
                "joined_at": timestamp(),
                "deaf": false,
                "mute": false,
                "flags": 0,
                "nick": null,
            });
        }
        None => {
            interaction["context"] = json!(1);
            interaction["user"] = user;
        }
    }
    interaction
}
