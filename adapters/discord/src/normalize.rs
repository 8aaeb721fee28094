//! Serenity messages, component interactions and slash commands → the
//! contract's inbound events.
//!
//! Addressing: a thread is its own chat (`ChatAddress.chat` = the thread's
//! channel id, `thread` = `None`, kind `Thread`), so answers stay in the thread
//! and every thread gets its own sessions; a thread under a free channel is free.
//!
//! A mention of one of the bot's own roles (Discord's autocomplete often offers
//! the bot's managed role for "@BotName") counts as a mention of the bot.

use chrono::{DateTime, Utc};
use serenity::model::application::{
    CommandInteraction, ComponentInteraction, ComponentInteractionDataKind, ModalInteraction,
};
use serenity::model::channel::{ChannelType, Message, MessageType, PartialChannel};
use serenity::model::guild::Member;
use serenity::model::id::RoleId;
use serenity::model::user::User as SerenityUser;
use serenity::model::Timestamp;
use std::collections::HashSet;
use switchboard_platform::{
    ActionId, Addressed, Attachment, AttachmentKind, ButtonPress, ChatAddress, ChatId, ChatKind,
    Form, InboundMessage, Menu, MessageId, MessageRef, Platform, PressHandle, PressInput, User,
    UserId,
};

/// Who the bot is and what the configuration says about users and channels.
pub(crate) struct Context<'a> {
    pub bot_id: u64,
    /// The bot's roles in the message's guild, when the message mentions roles.
    pub bot_roles: &'a [u64],
    pub approvers: &'a HashSet<u64>,
    pub approver_roles: &'a HashSet<u64>,
    pub free_channels: &'a HashSet<u64>,
}

/// Where a message was posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Dm,
    Channel,
    Thread { parent: Option<u64> },
}

impl Place {
    fn kind(self) -> ChatKind {
        match self {
            Place::Dm => ChatKind::Dm,
            Place::Channel => ChatKind::Channel,
            Place::Thread { .. } => ChatKind::Thread,
        }
    }

    /// A thread's channel, as the contract's id.
    fn parent(self) -> Option<ChatId> {
        match self {
            Place::Thread { parent: Some(p) } => to_i64(p).map(ChatId),
            _ => None,
        }
    }
}

/// What the adapter needs to answer an interaction, carried opaquely in
/// [`PressHandle`] so any instance can answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handle {
    pub interaction: u64,
    pub application: u64,
    pub token: String,
}

impl Handle {
    pub fn encode(&self) -> PressHandle {
        PressHandle(format!(
            "{}:{}:{}",
            self.interaction, self.application, self.token
        ))
    }

    pub fn decode(handle: &PressHandle) -> Option<Handle> {
        let mut parts = handle.0.splitn(3, ':');
        let interaction = parts.next()?.parse().ok()?;
        let application = parts.next()?.parse().ok()?;
        let token = parts.next().filter(|t| !t.is_empty())?.to_owned();
        Some(Handle {
            interaction,
            application,
            token,
        })
    }
}

/// The place of a guild or DM message whose channel kind is known.
pub(crate) fn place_of(guild: bool, channel_kind: Option<(u8, Option<u64>)>) -> Place {
    match (guild, channel_kind) {
        (false, _) => Place::Dm,
        (true, Some((10..=12, parent))) => Place::Thread { parent },
        (true, _) => Place::Channel,
    }
}

/// Normalizes a message; `None` for bots, the bot itself, system messages,
/// empty messages and ids that do not fit the contract.
pub(crate) fn message(
    msg: &Message,
    place: Place,
    ctx: &Context<'_>,
    sent_by_bot: impl Fn(u64) -> bool,
) -> Option<InboundMessage> {
    if msg.author.bot || msg.author.id.get() == ctx.bot_id || msg.webhook_id.is_some() {
        return None;
    }
    if !matches!(msg.kind, MessageType::Regular | MessageType::InlineReply) {
        return None;
    }
    let roles_mentioned = roles_mentioned(msg, ctx);
    let mentioned = mentions_bot(msg, ctx.bot_id) || !roles_mentioned.is_empty();
    let text = strip_mentions(&msg.content, ctx.bot_id, &roles_mentioned);
    let attachments: Vec<Attachment> = msg.attachments.iter().map(|a| attachment(msg, a)).collect();
    if text.is_empty() && attachments.is_empty() {
        return None;
    }
    let replied_to = msg.message_reference.as_ref().and_then(|r| r.message_id);
    let replies_to_bot = msg
        .referenced_message
        .as_ref()
        .is_some_and(|m| m.author.id.get() == ctx.bot_id)
        || replied_to.is_some_and(|id| sent_by_bot(id.get()));
    let channel = msg.channel_id.get();
    let free = ctx.free_channels.contains(&channel)
        || matches!(place, Place::Thread { parent: Some(p) } if ctx.free_channels.contains(&p));
    let addressed = match place {
        Place::Dm => Addressed::Dm,
        _ if mentioned => Addressed::Mention,
        _ if replies_to_bot => Addressed::ReplyToBot,
        _ if free => Addressed::FreeChannel,
        _ => Addressed::NotAddressed,
    };
    let roles = msg
        .member
        .as_ref()
        .map(|m| m.roles.as_slice())
        .unwrap_or_default();
    let nick = msg.member.as_ref().and_then(|m| m.nick.as_deref());
    Some(InboundMessage {
        chat: address(channel)?,
        chat_kind: place.kind(),
        user: user(&msg.author, nick, roles, ctx)?,
        message_id: MessageId(to_i64(msg.id.get())?),
        text,
        reply_to: match replied_to {
            Some(id) => Some(MessageId(to_i64(id.get())?)),
            None => None,
        },
        addressed,
        attachments,
        timestamp: utc(&msg.timestamp),
        parent: place.parent(),
    })
}

/// Whether the message mentions the bot itself (`<@id>` or `<@!id>`).
fn mentions_bot(msg: &Message, bot_id: u64) -> bool {
    msg.mentions.iter().any(|u| u.id.get() == bot_id)
        || mention_tokens(bot_id)
            .iter()
            .any(|t| msg.content.contains(t.as_str()))
}

/// The bot's roles the message mentions.
fn roles_mentioned(msg: &Message, ctx: &Context<'_>) -> Vec<u64> {
    ctx.bot_roles
        .iter()
        .copied()
        .filter(|r| {
            msg.mention_roles.iter().any(|m| m.get() == *r) || msg.content.contains(&role_token(*r))
        })
        .collect()
}

/// One attachment of a message; a voice message recorded in the app (it has
/// a waveform) is voice whatever its type.
fn attachment(msg: &Message, a: &serenity::model::channel::Attachment) -> Attachment {
    let kind = if a.waveform.is_some() {
        AttachmentKind::Voice
    } else {
        attachment_kind(a.content_type.as_deref())
    };
    let mut out = Attachment::new(kind, attachment_handle(msg, a));
    out.mime = a.content_type.clone();
    out.name = Some(a.filename.clone());
    out.size = Some(u64::from(a.size));
    out.duration_secs = a.duration_secs.map(|d| d.round() as u32);
    out
}

/// Why a component interaction is not forwarded as a press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotAPress {
    /// Neither a button nor a string select (user, role or channel selects
    /// are not part of the contract).
    NotAButton,
    /// The `custom_id` is not one of our action ids.
    UnknownCustomId,
    /// An id does not fit the contract.
    BadId,
    /// More values, or longer ones, than a menu or form of ours takes
    /// (Discord sends no more; anything else is not Discord's).
    Oversized,
}

/// Normalizes a button press or a choice in a string select.
pub(crate) fn press(
    interaction: &ComponentInteraction,
    ctx: &Context<'_>,
) -> Result<ButtonPress, NotAPress> {
    let input = match &interaction.data.kind {
        ComponentInteractionDataKind::Button => PressInput::None,
        ComponentInteractionDataKind::StringSelect { values } => {
            let fits = values.len() <= Menu::MAX_OPTIONS
                && values
                    .iter()
                    .all(|v| v.chars().count() <= Menu::MAX_VALUE_CHARS);
            if !fits {
                return Err(NotAPress::Oversized);
            }
            PressInput::Chosen(values.clone())
        }
        _ => return Err(NotAPress::NotAButton),
    };
    let from = Interacted {
        id: interaction.id.get(),
        application: interaction.application_id.get(),
        token: &interaction.token,
        in_guild: interaction.guild_id.is_some(),
        channel: interaction.channel.as_ref(),
        channel_id: interaction.channel_id.get(),
        member: interaction.member.as_ref(),
        user: &interaction.user,
        message: Some(interaction.message.id.get()),
    };
    from.press(&interaction.data.custom_id, input, ctx)
}

/// Normalizes a modal submit: a press of the modal's `custom_id` carrying
/// its fields, on the message whose button opened it (when one did).
pub(crate) fn modal_submit(
    interaction: &ModalInteraction,
    ctx: &Context<'_>,
) -> Result<ButtonPress, NotAPress> {
    let fields = crate::forms::submitted(&interaction.data.components);
    let fits = fields.len() <= Form::MAX_FIELDS
        && fields
            .iter()
            .all(|f| f.value.chars().count() <= Form::MAX_VALUE_CHARS);
    if !fits {
        return Err(NotAPress::Oversized);
    }
    let input = PressInput::Form(fields);
    let from = Interacted {
        id: interaction.id.get(),
        application: interaction.application_id.get(),
        token: &interaction.token,
        in_guild: interaction.guild_id.is_some(),
        channel: interaction.channel.as_ref(),
        channel_id: interaction.channel_id.get(),
        member: interaction.member.as_ref(),
        user: &interaction.user,
        message: interaction.message.as_ref().map(|m| m.id.get()),
    };
    from.press(&interaction.data.custom_id, input, ctx)
}

/// What a component interaction and a modal submit share.
struct Interacted<'a> {
    id: u64,
    application: u64,
    token: &'a str,
    in_guild: bool,
    channel: Option<&'a PartialChannel>,
    channel_id: u64,
    member: Option<&'a Member>,
    user: &'a SerenityUser,
    message: Option<u64>,
}

impl Interacted<'_> {
    fn press(
        &self,
        custom_id: &str,
        input: PressInput,
        ctx: &Context<'_>,
    ) -> Result<ButtonPress, NotAPress> {
        let action = ActionId::parse(custom_id).ok_or(NotAPress::UnknownCustomId)?;
        let place = interaction_place(self.in_guild, self.channel);
        let chat = address(self.channel_id).ok_or(NotAPress::BadId)?;
        let roles = self.member.map(|m| m.roles.as_slice()).unwrap_or_default();
        let nick = self.member.and_then(|m| m.nick.as_deref());
        let message = match self.message {
            Some(id) => Some(MessageRef {
                chat,
                id: MessageId(to_i64(id).ok_or(NotAPress::BadId)?),
            }),
            None => None,
        };
        let handle = Handle {
            interaction: self.id,
            application: self.application,
            token: self.token.to_owned(),
        };
        let created = serenity::model::id::InteractionId::new(self.id.max(1)).created_at();
        Ok(ButtonPress {
            chat,
            chat_kind: place.kind(),
            user: user(self.user, nick, roles, ctx).ok_or(NotAPress::BadId)?,
            action,
            message,
            handle: handle.encode(),
            timestamp: utc(&created),
            parent: place.parent(),
            input,
        })
    }
}

/// Where an interaction happened, from its guild and its partial channel.
fn interaction_place(in_guild: bool, channel: Option<&PartialChannel>) -> Place {
    match (in_guild, channel) {
        (false, _) => Place::Dm,
        (true, Some(channel)) => match channel.kind {
            ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread => {
                Place::Thread {
                    parent: channel.parent_id.map(|p| p.get()),
                }
            }
            _ => Place::Channel,
        },
        (true, None) => Place::Channel,
    }
}

/// Normalizes a slash command into the message its user would have typed:
/// `/name input`, addressed to the bot. The interaction id stands in for the
/// message id (there is no user message to reply to).
pub(crate) fn slash_command(
    interaction: &CommandInteraction,
    ctx: &Context<'_>,
) -> Option<InboundMessage> {
    let place = interaction_place(interaction.guild_id.is_some(), interaction.channel.as_ref());
    let chat = address(interaction.channel_id.get())?;
    let member = interaction.member.as_deref();
    let roles = member.map(|m| m.roles.as_slice()).unwrap_or_default();
    let nick = member.and_then(|m| m.nick.as_deref());
    let author = member.map_or(&interaction.user, |m| &m.user);
    Some(InboundMessage {
        chat,
        chat_kind: place.kind(),
        user: user(author, nick, roles, ctx)?,
        message_id: MessageId(to_i64(interaction.id.get())?),
        text: crate::slash::typed(interaction),
        reply_to: None,
        addressed: Addressed::Command,
        attachments: Vec::new(),
        timestamp: utc(&interaction.id.created_at()),
        parent: place.parent(),
    })
}

/// The place of an interaction's channel, for the channel-kind cache.
pub(crate) fn interaction_channel(
    channel: Option<&PartialChannel>,
) -> Option<(u64, u8, Option<u64>)> {
    let channel = channel?;
    Some((
        channel.id.get(),
        u8::from(channel.kind),
        channel.parent_id.map(|p| p.get()),
    ))
}

/// Whether a guild message may mention a role: only then are the bot's roles
/// worth a look-up.
pub(crate) fn mentions_roles(msg: &Message) -> bool {
    msg.guild_id.is_some() && (!msg.mention_roles.is_empty() || msg.content.contains("<@&"))
}

/// Removes `<@id>` and `<@!id>` mentions of the bot and `<@&role>` mentions of
/// `roles` (with the space after them).
pub(crate) fn strip_mentions(text: &str, bot_id: u64, roles: &[u64]) -> String {
    let mut out = text.to_owned();
    let tokens = mention_tokens(bot_id)
        .into_iter()
        .chain(roles.iter().map(|r| role_token(*r)));
    for token in tokens {
        out = out.replace(&format!("{token} "), "").replace(&token, "");
    }
    out.trim().to_owned()
}

fn mention_tokens(bot_id: u64) -> [String; 2] {
    [format!("<@{bot_id}>"), format!("<@!{bot_id}>")]
}

fn role_token(role: u64) -> String {
    format!("<@&{role}>")
}

fn user(
    author: &SerenityUser,
    nick: Option<&str>,
    roles: &[RoleId],
    ctx: &Context<'_>,
) -> Option<User> {
    let id = author.id.get();
    let display_name = nick
        .or(author.global_name.as_deref())
        .unwrap_or(&author.name)
        .to_owned();
    Some(User {
        is_approver: ctx.approvers.contains(&id)
            || roles.iter().any(|r| ctx.approver_roles.contains(&r.get())),
        id: UserId(to_i64(id)?),
        display_name,
        is_bot: author.bot,
    })
}

fn address(channel: u64) -> Option<ChatAddress> {
    Some(ChatAddress::new(
        Platform::Discord,
        ChatId(to_i64(channel)?),
        None,
    ))
}

/// Snowflakes fit in i64 until 2084; anything else is not a real id.
fn to_i64(id: u64) -> Option<i64> {
    i64::try_from(id).ok()
}

fn utc(ts: &Timestamp) -> DateTime<Utc> {
    ts.to_rfc3339()
        .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
        .map(|t| t.with_timezone(&Utc))
        .or_else(|| DateTime::from_timestamp(ts.unix_timestamp(), 0))
        .unwrap_or_else(Utc::now)
}

/// What a Discord attachment is, from the type Discord reports.
fn attachment_kind(content_type: Option<&str>) -> AttachmentKind {
    let mime = content_type.unwrap_or_default();
    if mime.starts_with("image/") {
        AttachmentKind::Image
    } else if mime.starts_with("audio/") {
        AttachmentKind::Audio
    } else if mime.starts_with("video/") {
        AttachmentKind::Video
    } else {
        AttachmentKind::Document
    }
}

/// `channel/message/attachment`: the adapter fetches the message again at
/// download time for a fresh signed CDN address, which the core never sees.
fn attachment_handle(msg: &Message, a: &serenity::model::channel::Attachment) -> String {
    format!("{}/{}/{}", msg.channel_id.get(), msg.id.get(), a.id.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_stripped() {
        assert_eq!(strip_mentions("<@42> hello there", 42, &[]), "hello there");
        assert_eq!(
            strip_mentions("hey <@!42>, what's up", 42, &[]),
            "hey , what's up"
        );
        assert_eq!(strip_mentions("<@43> hi", 42, &[]), "<@43> hi");
        assert_eq!(strip_mentions("<@42>", 42, &[]), "");
        assert_eq!(
            strip_mentions("<@42> look:\n```\n  indented\n```", 42, &[]),
            "look:\n```\n  indented\n```"
        );
    }

    #[test]
    fn role_mentions_of_the_bot_are_stripped() {
        assert_eq!(strip_mentions("<@&7> hello", 42, &[7]), "hello");
        assert_eq!(strip_mentions("hi <@&7>", 42, &[7]), "hi");
        // Another role, or a user mention with the role's digits, stays.
        assert_eq!(strip_mentions("<@&8> hello", 42, &[7]), "<@&8> hello");
        assert_eq!(strip_mentions("<@7> hello", 42, &[7]), "<@7> hello");
        assert_eq!(strip_mentions("<@&7> <@42> both", 42, &[7]), "both");
    }

    #[test]
    fn handles_round_trip() {
        let handle = Handle {
            interaction: 11,
            application: 22,
            token: "tok:en.with-colon".into(),
        };
        assert_eq!(Handle::decode(&handle.encode()), Some(handle));
        assert_eq!(Handle::decode(&PressHandle("x:1:t".into())), None);
        assert_eq!(Handle::decode(&PressHandle("1:2:".into())), None);
    }

    /// A modal submit in a DM with `fields` text inputs of `len` characters.
    fn modal_submit_json(fields: usize, len: usize) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = (0..fields)
            .map(|i| {
                serde_json::json!({ "type": 1, "components": [
                    { "type": 4, "custom_id": format!("f{i}"), "value": "v".repeat(len) },
                ] })
            })
            .collect();
        serde_json::json!({
            "id": "1100000000000000100", "application_id": "1100000000000000002",
            "type": 5, "token": "t", "version": 1, "channel_id": "1100000000000000200",
            "locale": "en-US", "entitlements": [], "attachment_size_limit": 1024,
            "user": { "id": "1300000000000000001", "username": "ann", "discriminator": "0",
                      "global_name": "Ann", "avatar": null, "bot": false },
            "data": { "custom_id": "ap:1:e", "components": rows },
        })
    }

    #[test]
    fn modal_submits_become_presses_within_the_forms_bounds() {
        use serenity::model::application::Interaction;
        let none = HashSet::new();
        let ctx = Context {
            bot_id: 42,
            bot_roles: &[],
            approvers: &none,
            approver_roles: &none,
            free_channels: &none,
        };
        let submit = |fields, len| match serde_json::from_value(modal_submit_json(fields, len)) {
            Ok(Interaction::Modal(m)) => modal_submit(&m, &ctx),
            other => panic!("not a modal submit: {other:?}"),
        };
        let press = submit(2, 4000).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(press.action.as_str(), "ap:1:e");
        assert_eq!(press.message, None, "no message: not opened from a button");
        let fields = press.input.form().unwrap_or_default();
        assert_eq!((fields.len(), fields[1].id.as_str()), (2, "f1"));
        assert_eq!(submit(6, 1).map(drop), Err(NotAPress::Oversized));
        assert_eq!(submit(1, 4001).map(drop), Err(NotAPress::Oversized));
    }

    #[test]
    fn places_follow_channel_kinds() {
        assert_eq!(place_of(false, None), Place::Dm);
        assert_eq!(place_of(true, Some((0, None))), Place::Channel);
        assert_eq!(
            place_of(true, Some((11, Some(5)))),
            Place::Thread { parent: Some(5) }
        );
        assert_eq!(place_of(true, None), Place::Channel);
    }
}
