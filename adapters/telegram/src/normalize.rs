//! Telegram updates → the contract's inbound events: chat kinds, topics,
//! how a group message is addressed to the bot, captions, callback queries.
//!
//! Deliberate choices:
//! - Edited messages are ignored: the agent already answered the original, and
//!   re-running a turn on every typo fix would surprise users and double costs.
//! - Channel posts are ignored: the bot talks with people, not broadcasts.
//! - Media without caption gets a short "text only" note in DMs (and in groups
//!   when it replies to the bot); unaddressed group media is ignored silently.

use crate::utf16::{utf16_range, Utf16Index};
use chrono::Utc;
use std::collections::HashSet;
use std::ops::Range;
use switchboard_platform::{
    ActionId, Addressed, Attachment, AttachmentKind, ButtonPress, ChatAddress, ChatId, ChatKind,
    Inbound, InboundMessage, MessageId, MessageRef, Platform, PressHandle, ThreadId, User,
};
use teloxide::types::{
    CallbackQuery, Chat, MediaKind, Message, MessageEntity, MessageEntityKind, MessageKind, Update,
    UpdateKind,
};

/// The bot's own identity, from `getMe`.
#[derive(Debug, Clone)]
pub(crate) struct BotIdentity {
    pub id: i64,
    pub username: String,
}

/// A command the message opens with.
#[derive(Debug)]
enum Command {
    /// For us (`/cmd` or `/cmd@ourbot`): the text normalized to `/cmd args`.
    Ours(String),
    /// `/cmd@otherbot`.
    OtherBot,
}

/// What to do with one update.
#[derive(Debug)]
pub(crate) enum Action {
    Forward(Inbound),
    /// A callback query we cannot use: answer it so the client stops waiting.
    AnswerEmpty(String),
    Ignore(&'static str),
}

pub(crate) struct Normalizer {
    me: BotIdentity,
    approvers: HashSet<i64>,
}

impl Normalizer {
    pub fn new(me: BotIdentity, approvers: HashSet<i64>) -> Self {
        Self { me, approvers }
    }

    pub fn update(&self, update: &Update) -> Action {
        match &update.kind {
            UpdateKind::Message(msg) => self.message(msg),
            UpdateKind::CallbackQuery(q) => self.callback(q),
            UpdateKind::MessageReaction(r) => self.reaction(r),
            UpdateKind::EditedMessage(_) => Action::Ignore("edited message"),
            UpdateKind::ChannelPost(_) | UpdateKind::EditedChannelPost(_) => {
                Action::Ignore("channel post")
            }
            UpdateKind::Error(_) => Action::Ignore("update teloxide could not parse"),
            _ => Action::Ignore("update kind not handled"),
        }
    }

    fn user(&self, u: &teloxide::types::User) -> Option<User> {
        let id = i64::try_from(u.id.0).ok()?;
        Some(User {
            is_approver: self.approvers.contains(&id),
            id: switchboard_platform::UserId(id),
            display_name: u.full_name(),
            is_bot: u.is_bot,
        })
    }

    fn message(&self, msg: &Message) -> Action {
        let Some(chat_kind) = chat_kind(&msg.chat) else {
            return Action::Ignore("channel message");
        };
        let Some(from) = msg.from.as_ref() else {
            return Action::Ignore("message without sender");
        };
        let Some(user) = self.user(from) else {
            return Action::Ignore("sender id out of range");
        };
        if user.id.0 == self.me.id {
            return Action::Ignore("own message");
        }
        let thread = topic(msg);
        let chat = ChatAddress::new(Platform::Telegram, ChatId(msg.chat.id.0), thread);
        let message_id = MessageId(i64::from(msg.id.0));
        // In a forum topic every message "replies" to the topic's root message.
        let reply = msg
            .reply_to_message()
            .filter(|r| thread.is_none_or(|t| i64::from(r.id.0) != t.0));
        let reply_to_bot = reply
            .and_then(|r| r.from.as_ref())
            .is_some_and(|u| i64::try_from(u.id.0).ok() == Some(self.me.id));

        let attachment = attachment(msg);
        let (text, entities) = match (msg.text(), msg.caption()) {
            (Some(t), _) => (t, msg.entities().unwrap_or_default()),
            (None, Some(c)) => (c, msg.caption_entities().unwrap_or_default()),
            // Media without a caption goes to the core like any message (it
            // decides what to answer, after its access checks), but only where
            // it is addressed to the bot.
            // An album's other parts come without a caption: they join the
            // album, which decides (see `album.rs`).
            (None, None) if attachment.is_some() => {
                if chat_kind != ChatKind::Dm && !reply_to_bot && msg.media_group_id().is_none() {
                    return Action::Ignore("media without caption in a group");
                }
                ("", &[][..])
            }
            (None, None) => return Action::Ignore("service message"),
        };

        let (addressed, text) = self.address(chat_kind, text, entities, reply_to_bot);
        Action::Forward(Inbound::Message(InboundMessage {
            chat,
            chat_kind,
            user,
            message_id,
            text,
            reply_to: reply.map(|r| MessageId(i64::from(r.id.0))),
            addressed,
            attachments: attachment.into_iter().collect(),
            timestamp: msg.date,
            parent: None,
        }))
    }

    /// Decides how the message is addressed and normalizes its text.
    fn address(
        &self,
        kind: ChatKind,
        text: &str,
        entities: &[MessageEntity],
        reply_to_bot: bool,
    ) -> (Addressed, String) {
        match self.command(text, entities) {
            Some(Command::Ours(normalized)) => {
                let addressed = if kind == ChatKind::Dm {
                    Addressed::Dm
                } else {
                    Addressed::Command
                };
                return (addressed, normalized);
            }
            // Explicitly meant for another bot, even in a reply to ours.
            Some(Command::OtherBot) => return (Addressed::NotAddressed, text.trim().to_owned()),
            None => {}
        }
        let mentions = self.bot_mentions(text, entities);
        let stripped = if mentions.is_empty() {
            text.trim().to_owned()
        } else {
            strip_ranges(text, &mentions)
        };
        let addressed = if kind == ChatKind::Dm {
            Addressed::Dm
        } else if !mentions.is_empty() {
            Addressed::Mention
        } else if reply_to_bot {
            Addressed::ReplyToBot
        } else {
            Addressed::NotAddressed
        };
        (addressed, stripped)
    }

    /// The command the text opens with, if any. Only a `bot_command` entity at
    /// offset 0 makes one: Telegram creates those just for
    /// `/[A-Za-z0-9_]+(@botname)?` standing alone, so "/etc/hosts is broken"
    /// is no command. `/cmd@bot args` becomes `/cmd args`.
    fn command(&self, text: &str, entities: &[MessageEntity]) -> Option<Command> {
        let entity = entities
            .iter()
            .find(|e| e.offset == 0 && matches!(e.kind, MessageEntityKind::BotCommand))?;
        let range = utf16_range(text, 0, entity.length)?;
        let name = text[range.clone()].strip_prefix('/')?;
        let (cmd, bot) = match name.split_once('@') {
            Some((cmd, bot)) => (cmd, Some(bot)),
            None => (name, None),
        };
        // Entities are untrusted input too: check the shape Telegram promises.
        let word =
            |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !word(cmd) || bot.is_some_and(|b| !word(b)) {
            return None;
        }
        if bot.is_some_and(|b| !b.eq_ignore_ascii_case(&self.me.username)) {
            return Some(Command::OtherBot);
        }
        let rest = text[range.end..].trim();
        Some(Command::Ours(if rest.is_empty() {
            format!("/{cmd}")
        } else {
            format!("/{cmd} {rest}")
        }))
    }

    /// Byte ranges of `@botname` mentions (or text mentions of the bot).
    fn bot_mentions(&self, text: &str, entities: &[MessageEntity]) -> Vec<Range<usize>> {
        let handle = format!("@{}", self.me.username);
        // Mapped once: thousands of entities must not rescan the text each.
        let index = (!entities.is_empty()).then(|| Utf16Index::new(text));
        let mut found: Vec<Range<usize>> = entities
            .iter()
            .filter_map(|e| {
                let range = index.as_ref()?.range(e.offset, e.length)?;
                let ours = match &e.kind {
                    MessageEntityKind::Mention => text
                        .get(range.clone())
                        .is_some_and(|m| m.eq_ignore_ascii_case(&handle)),
                    MessageEntityKind::TextMention { user } => {
                        i64::try_from(user.id.0).ok() == Some(self.me.id)
                    }
                    _ => false,
                };
                ours.then_some(range)
            })
            .collect();
        if entities.is_empty() {
            // Without entities (some clients, forwarded text), look for the handle.
            found = word_matches(text, &handle);
        }
        found
    }

    fn reaction(&self, r: &teloxide::types::MessageReactionUpdated) -> Action {
        let (Some(chat_kind), Some(user)) =
            (chat_kind(&r.chat), r.user().and_then(|u| self.user(u)))
        else {
            return Action::Ignore("reaction from an anonymous admin or a channel");
        };
        match crate::reactions::added(r, user, chat_kind) {
            Some(reaction) => Action::Forward(Inbound::Reaction(reaction)),
            None => Action::Ignore("reaction removed"),
        }
    }

    fn callback(&self, q: &CallbackQuery) -> Action {
        let id = q.id.0.clone();
        let Some(action) = q.data.as_deref().and_then(ActionId::parse) else {
            return Action::AnswerEmpty(id);
        };
        let Some(message) = q.message.as_ref() else {
            // Inline-mode messages have no chat: not ours.
            return Action::AnswerEmpty(id);
        };
        let Some(chat_kind) = chat_kind(message.chat()) else {
            return Action::AnswerEmpty(id);
        };
        let Some(user) = self.user(&q.from) else {
            return Action::AnswerEmpty(id);
        };
        let thread = message.regular_message().and_then(topic);
        let chat = ChatAddress::new(Platform::Telegram, ChatId(message.chat().id.0), thread);
        Action::Forward(Inbound::ButtonPress(ButtonPress {
            chat,
            chat_kind,
            user,
            action,
            message: Some(MessageRef {
                chat,
                id: MessageId(i64::from(message.id().0)),
            }),
            handle: PressHandle(id),
            timestamp: Utc::now(),
            parent: None,
            input: Default::default(),
        }))
    }
}

fn chat_kind(chat: &Chat) -> Option<ChatKind> {
    if chat.is_private() {
        Some(ChatKind::Dm)
    } else if chat.is_group() || chat.is_supergroup() {
        Some(ChatKind::Group)
    } else {
        None
    }
}

/// The forum topic a message belongs to; plain reply threads are not topics.
fn topic(msg: &Message) -> Option<ThreadId> {
    msg.is_topic_message
        .then_some(msg.thread_id)
        .flatten()
        .map(|t| ThreadId(i64::from(t.0 .0)))
}

/// The file a message carries, as the core sees it: the handle is the
/// `file_id` `getFile` resolves. Stickers, animations and video notes are left
/// out deliberately (decoration, not content); a photo is its largest size
/// that a bot can download.
fn attachment(msg: &Message) -> Option<Attachment> {
    let MessageKind::Common(common) = &msg.kind else {
        return None;
    };
    let file = |kind, file: &teloxide::types::FileMeta| {
        let mut a = Attachment::new(kind, file.id.0.clone());
        a.size = (file.size != u32::MAX).then_some(u64::from(file.size));
        a
    };
    let a = match &common.media_kind {
        MediaKind::Photo(p) => {
            // Sizes come smallest first; the largest a bot may download.
            let fits = |s: &&teloxide::types::PhotoSize| {
                s.file.size == u32::MAX
                    || u64::from(s.file.size) <= crate::download::MAX_DOWNLOAD_BYTES
            };
            let size = p.photo.iter().rev().find(fits).or(p.photo.last())?;
            let mut a = file(AttachmentKind::Image, &size.file);
            a.mime = Some("image/jpeg".to_owned());
            a
        }
        MediaKind::Document(d) => {
            let mut a = file(AttachmentKind::Document, &d.document.file);
            a.name = d.document.file_name.clone();
            a.mime = d.document.mime_type.as_ref().map(|m| m.to_string());
            a
        }
        MediaKind::Video(v) => {
            let mut a = file(AttachmentKind::Video, &v.video.file);
            a.name = v.video.file_name.clone();
            a.mime = v.video.mime_type.as_ref().map(|m| m.to_string());
            a.duration_secs = Some(v.video.duration.seconds());
            a
        }
        MediaKind::Audio(au) => {
            let mut a = file(AttachmentKind::Audio, &au.audio.file);
            a.name = au.audio.file_name.clone();
            a.mime = au.audio.mime_type.as_ref().map(|m| m.to_string());
            a.duration_secs = Some(au.audio.duration.seconds());
            a
        }
        MediaKind::Voice(v) => {
            let mut a = file(AttachmentKind::Voice, &v.voice.file);
            a.mime = Some(
                v.voice
                    .mime_type
                    .as_ref()
                    .map_or_else(|| "audio/ogg".to_owned(), |m| m.to_string()),
            );
            a.duration_secs = Some(v.voice.duration.seconds());
            a
        }
        _ => return None,
    };
    Some(a)
}

/// Occurrences of `needle` not glued to other word characters, case-insensitive.
fn word_matches(text: &str, needle: &str) -> Vec<Range<usize>> {
    let lower = text.to_ascii_lowercase();
    let needle = needle.to_ascii_lowercase();
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    lower
        .match_indices(&needle)
        .map(|(i, m)| i..i + m.len())
        .filter(|r| !is_word(text[r.end..].chars().next()))
        .filter(|r| {
            !is_word(text[..r.start].chars().next_back()) && !text[..r.start].ends_with('@')
        })
        .collect()
}

/// Removes `ranges` from `text` and tidies only around them ("@bot, hi" →
/// "hi"): spacing, indentation and line breaks elsewhere stay as typed.
fn strip_ranges(text: &str, ranges: &[Range<usize>]) -> String {
    const BLANK: [char; 2] = [' ', '\t'];
    let mut sorted = ranges.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in sorted {
        if r.start < at || r.end > text.len() {
            continue;
        }
        out.push_str(&text[at..r.start]);
        at = r.end;
        // A mention between blanks (or at a line start) takes the blanks after
        // it along, so "ask @bot  now" reads "ask now"; nothing else moves.
        if out.is_empty() || out.ends_with([' ', '\t', '\n']) {
            let rest = &text[at..];
            at += rest.len() - rest.trim_start_matches(BLANK).len();
        }
    }
    out.push_str(&text[at..]);
    let out = out.trim_end();
    // Lines the mention left blank go; the next line keeps its indentation
    // (it may open a code block). A first line that just had blanks before
    // the mention loses them, as untouched text is trimmed too.
    let lead = out.len() - out.trim_start().len();
    let out = match out[..lead].rfind('\n') {
        Some(newline) => &out[newline + 1..],
        None => out.trim_start(),
    };
    // "@bot, do this" / "@bot: do this" → "do this".
    match out.strip_prefix([',', ':', ';']) {
        Some(rest) => rest
            .trim_start_matches([',', ':', ';'])
            .trim_start()
            .to_owned(),
        None => out.to_owned(),
    }
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
