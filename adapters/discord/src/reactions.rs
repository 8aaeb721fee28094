//! Reactions: the bot's status reaction on a user's message (`PUT
//! /channels/{channel.id}/messages/{message.id}/reactions/{emoji}/@me`, the
//! previous one removed with `DELETE …/@me`), both at the pacer's lowest
//! priority like typing; and the reactions users add (`MESSAGE_REACTION_ADD`,
//! intents `GUILD_MESSAGE_REACTIONS` and `DIRECT_MESSAGE_REACTIONS`) as
//! inbound events.

use crate::errors::RestError;
use crate::rest::{nz, retry_of, Lane, Rest, HTTP_TIMEOUT};
use chrono::Utc;
use serenity::http::{LightMethod, Request, Route};
use serenity::model::channel::{Reaction as SerenityReaction, ReactionType};
use serenity::model::id::{ChannelId, MessageId as SnowflakeMessage};
use switchboard_platform::{
    ChatAddress, ChatId, ChatKind, MessageId, MessageRef, Platform, Reaction, StatusEmoji, User,
    UserId,
};

/// How often, and how soon again, the previous reaction's removal is tried
/// when it gives way.
const DELETE_TRIES: u32 = 40;
const DELETE_RETRY: std::time::Duration = std::time::Duration::from_millis(25);

/// The status emoji used unless configured.
pub fn default_status_emoji() -> StatusEmoji {
    StatusEmoji::new("👀", "✍️", "✅", "❌")
}

/// Discord takes any Unicode emoji; a custom one is given as `name:id`.
pub fn allowed_reaction(emoji: &str) -> bool {
    !emoji.trim().is_empty()
}

impl Rest {
    /// Puts the bot's `emoji` on a message and takes its `previous` one off,
    /// each only if it can go at once without delaying a message.
    /// `Ok(false)` when a call gave way: both are idempotent, so the caller
    /// simply tries again.
    /// Waits until the channel's call in flight has ended, at most `within`
    /// (for a status reaction that gave way to it).
    pub(crate) async fn wait_idle(&self, channel: u64, within: std::time::Duration) {
        self.pacer
            .wait_idle(&[&Lane::Channel(channel)], within)
            .await;
    }

    pub(crate) async fn react(
        &self,
        channel: u64,
        message: u64,
        emoji: &str,
        previous: Option<&str>,
    ) -> Result<bool, RestError> {
        if !self
            .own_reaction(LightMethod::Put, channel, message, emoji)
            .await?
        {
            return Ok(false);
        }
        let Some(previous) = previous.filter(|p| *p != emoji) else {
            return Ok(true);
        };
        // The PUT just took the bot-wide token: the DELETE waits for the
        // next free one rather than going back to the caller, whose retry
        // would put the new reaction again first.
        for _ in 0..DELETE_TRIES {
            if self
                .own_reaction(LightMethod::Delete, channel, message, previous)
                .await?
            {
                return Ok(true);
            }
            tokio::time::sleep(DELETE_RETRY).await;
        }
        Ok(false)
    }

    async fn own_reaction(
        &self,
        method: LightMethod,
        channel: u64,
        message: u64,
        emoji: &str,
    ) -> Result<bool, RestError> {
        let reaction = ReactionType::Unicode(emoji.to_owned()).as_data();
        let route = Route::ChannelMessageReactionMe {
            channel_id: ChannelId::from(nz(channel)?),
            message_id: SnowflakeMessage::from(nz(message)?),
            reaction: &reaction,
        };
        let sent = self
            .pacer
            .run_if_idle(
                &[&Lane::Channel(channel)],
                || self.exchange(Request::new(route, method), HTTP_TIMEOUT),
                retry_of,
            )
            .await;
        sent.transpose().map(|s| s.is_some())
    }
}

/// A user's `MESSAGE_REACTION_ADD` as the contract's reaction; `None` for
/// the bot's own (its status reactions come back as events too) and ids
/// outside the contract.
pub(crate) fn added(
    reaction: &SerenityReaction,
    bot_id: u64,
    approvers: &std::collections::HashSet<u64>,
) -> Option<Reaction> {
    let user_id = reaction.user_id?.get();
    if user_id == bot_id {
        return None;
    }
    let member_user = reaction.member.as_ref().map(|m| &m.user);
    let channel = i64::try_from(reaction.channel_id.get()).ok()?;
    let chat = ChatAddress::new(Platform::Discord, ChatId(channel), None);
    let emoji = match &reaction.emoji {
        ReactionType::Unicode(e) => e.clone(),
        ReactionType::Custom { name, .. } => name.clone().unwrap_or_default(),
        _ => return None,
    };
    Some(Reaction {
        chat,
        chat_kind: if reaction.guild_id.is_some() {
            ChatKind::Group
        } else {
            ChatKind::Dm
        },
        user: User {
            is_approver: approvers.contains(&user_id),
            id: UserId(i64::try_from(user_id).ok()?),
            display_name: member_user.map(|u| u.name.clone()).unwrap_or_default(),
            is_bot: member_user.is_some_and(|u| u.bot),
        },
        message: MessageRef {
            chat,
            id: MessageId(i64::try_from(reaction.message_id.get()).ok()?),
        },
        emoji: vec![emoji],
        timestamp: Utc::now(),
        parent: None,
    })
}
