//! Outbound calls: sends and edits paced by our governor layer (per chat, per
//! group, per bot) with 429 pause-and-resume, HTML with a plain-text fallback,
//! callback answers and chat actions.

use crate::config::TelegramLimits;
use crate::errors::{classify, is_not_modified, is_parse_error, scrubbed, to_platform};
use crate::render::{has_no_visible_text, markdown_to_html, visible_len};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use switchboard_platform::{
    Button, ChatAddress, MessageId, MessageRef, OutgoingMessage, Pacer, PlatformError, Secret,
};
use teloxide::payloads::{
    AnswerCallbackQuerySetters, EditMessageTextSetters, SendChatActionSetters, SendMessageSetters,
};
use teloxide::prelude::Requester;
use teloxide::types::{
    CallbackQueryId, ChatAction, ChatId as TgChatId, InlineKeyboardButton, InlineKeyboardMarkup,
    MessageId as TgMessageId, ParseMode, ReplyParameters, ThreadId as TgThreadId,
};
use teloxide::{Bot, RequestError};

/// Telegram's limit on message text, in UTF-16 units after entity parsing.
pub(crate) const MAX_TEXT_UTF16: usize = 4096;
/// Telegram's limit on a callback answer's text, in characters.
const MAX_CALLBACK_TEXT: usize = 200;

/// A lane of the pacer: Telegram's limits are per chat, whatever the topic;
/// a private chat's drafts have a budget of their own beside its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    /// Messages, edits, files and chat actions in a chat.
    Chat(i64),
    /// `sendMessageDraft` in a private chat (see `drafts.rs`).
    Drafts(i64),
}

pub(crate) struct Outbound {
    pub(crate) bot: Bot,
    pub(crate) token: Secret,
    pub(crate) pacer: Pacer<Lane>,
    /// Private chats where Telegram refused drafts, and whether that was logged.
    pub(crate) drafts: crate::drafts::Refusals,
    /// How long a draft may wait for a bot-wide token no message wants: a
    /// quarter of a chat's interval, so the final answer, which waits for
    /// the draft on its way, is held up little.
    pub(crate) draft_within: std::time::Duration,
    /// 429s on calls outside the pacer (callback answers, the command menu).
    unpaced_429s: AtomicU64,
    /// Groups upgraded to supergroups: old chat id → new chat id.
    migrated: Mutex<HashMap<i64, i64>>,
}

/// A message made ready to send, whichever chat it goes to.
struct Prepared {
    /// The HTML, and whether to send the plain text instead.
    rendered: (String, AtomicBool),
    thread: Option<TgThreadId>,
    reply: Option<TgMessageId>,
}

pub(crate) fn tg_message_id(id: MessageId) -> Result<TgMessageId, PlatformError> {
    i32::try_from(id.0)
        .map(TgMessageId)
        .map_err(|_| PlatformError::NotFound)
}

impl Outbound {
    pub fn new(bot: Bot, token: Secret, limits: TelegramLimits) -> Self {
        let TelegramLimits {
            per_chat,
            per_group,
            per_bot,
        } = limits;
        // Telegram group and channel ids are negative, users' chats positive.
        // A chat's drafts: one a `per_chat` interval, counted on their own.
        let pacer = Pacer::new(per_bot, move |lane: &Lane| match *lane {
            Lane::Chat(chat) if chat < 0 => vec![per_chat, per_group],
            Lane::Chat(_) | Lane::Drafts(_) => vec![per_chat],
        });
        Self {
            bot,
            token,
            pacer,
            drafts: crate::drafts::Refusals::default(),
            draft_within: per_chat.replenish_interval() / 4,
            unpaced_429s: AtomicU64::new(0),
            migrated: Mutex::new(HashMap::new()),
        }
    }

    /// 429 answers received so far (each one paused a chat and was retried).
    pub fn rate_limited_count(&self) -> u64 {
        self.pacer.rate_limited_count() + self.unpaced_429s.load(Ordering::Relaxed)
    }

    /// Sends one message (text within Telegram's limit). HTML first; if
    /// Telegram cannot parse the entities, the same text goes out as plain text.
    /// A group upgraded to a supergroup is followed: the message (and every
    /// later one for the old id) goes to the new chat Telegram names.
    pub async fn send(
        &self,
        to: &ChatAddress,
        message: &OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let prepared = Prepared {
            rendered: render(&message.text)?,
            thread: to
                .thread
                .map(|t| tg_message_id(MessageId(t.0)).map(TgThreadId))
                .transpose()?,
            reply: message.reply_to.map(tg_message_id).transpose()?,
        };
        let to = self.current(to);
        match self.send_to(&to, message, &prepared).await {
            Err(RequestError::MigrateToChatId(new)) => {
                tracing::info!(
                    old = to.chat.0,
                    new = new.0,
                    "the group was upgraded to a supergroup; following it"
                );
                self.migrated_lock().insert(to.chat.0, new.0);
                let to = self.current(&to);
                self.send_to(&to, message, &prepared).await
            }
            sent => sent,
        }
        .map_err(|e| to_platform(&e, &self.token))
    }

    /// `to`, or the supergroup it was upgraded to.
    pub(crate) fn current(&self, to: &ChatAddress) -> ChatAddress {
        match self.migrated_lock().get(&to.chat.0) {
            Some(&new) => ChatAddress {
                chat: switchboard_platform::ChatId(new),
                ..*to
            },
            None => *to,
        }
    }

    fn migrated_lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, i64>> {
        self.migrated.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn send_to(
        &self,
        to: &ChatAddress,
        message: &OutgoingMessage,
        prepared: &Prepared,
    ) -> Result<MessageRef, RequestError> {
        let (html, plain) = (&prepared.rendered.0, &prepared.rendered.1);
        let (thread, reply, this) = (prepared.thread, prepared.reply, self);
        let sent = self
            .pacer
            .run(
                &Lane::Chat(to.chat.0),
                move || async move {
                    if !plain.load(Ordering::Relaxed) {
                        match this.send_once(to, message, Some(html), thread, reply).await {
                            Err(e) if is_parse_error(&e) => {
                                tracing::warn!(chat = to.chat.0, error = %scrubbed(&e, &this.token),
                                    "Telegram refused our HTML; resending as plain text");
                                plain.store(true, Ordering::Relaxed);
                            }
                            other => return other,
                        }
                    }
                    this.send_once(to, message, None, thread, reply).await
                },
                classify,
            )
            .await?;
        Ok(MessageRef {
            chat: *to,
            id: MessageId(i64::from(sent.id.0)),
        })
    }

    async fn send_once(
        &self,
        to: &ChatAddress,
        message: &OutgoingMessage,
        html: Option<&str>,
        thread: Option<TgThreadId>,
        reply: Option<TgMessageId>,
    ) -> Result<teloxide::types::Message, RequestError> {
        let text = html.unwrap_or(&message.text);
        let mut req = self.bot.send_message(TgChatId(to.chat.0), text);
        if html.is_some() {
            req = req.parse_mode(ParseMode::Html);
        }
        if let Some(thread) = thread {
            req = req.message_thread_id(thread);
        }
        if let Some(reply) = reply {
            req = req.reply_parameters(ReplyParameters::new(reply).allow_sending_without_reply());
        }
        if !message.buttons.is_empty() {
            req = req.reply_markup(keyboard(&message.buttons));
        }
        req.await
    }

    /// Replaces a message's text and keyboard (no buttons removes the keyboard).
    /// "Message is not modified" is success.
    pub async fn edit(
        &self,
        target: &MessageRef,
        message: &OutgoingMessage,
    ) -> Result<(), PlatformError> {
        let (html, plain) = render(&message.text)?;
        let id = tg_message_id(target.id)?;
        let (this, html, plain) = (self, &html, &plain);
        let chat = target.chat.chat.0;
        let result = self
            .pacer
            .run(
                &Lane::Chat(chat),
                move || async move {
                    if !plain.load(Ordering::Relaxed) {
                        match this.edit_once(chat, id, message, Some(html)).await {
                            Err(e) if is_parse_error(&e) => {
                                tracing::warn!(chat, error = %scrubbed(&e, &this.token),
                                    "Telegram refused our HTML edit; resending as plain text");
                                plain.store(true, Ordering::Relaxed);
                            }
                            other => return other,
                        }
                    }
                    this.edit_once(chat, id, message, None).await
                },
                classify,
            )
            .await;
        match result {
            Ok(()) => Ok(()),
            Err(e) if is_not_modified(&e) => Ok(()),
            Err(e) => Err(to_platform(&e, &self.token)),
        }
    }

    async fn edit_once(
        &self,
        chat: i64,
        id: TgMessageId,
        message: &OutgoingMessage,
        html: Option<&str>,
    ) -> Result<(), RequestError> {
        let text = html.unwrap_or(&message.text);
        let mut req = self.bot.edit_message_text(TgChatId(chat), id, text);
        if html.is_some() {
            req = req.parse_mode(ParseMode::Html);
        }
        if !message.buttons.is_empty() {
            req = req.reply_markup(keyboard(&message.buttons));
        }
        match req.await {
            Ok(_) => Ok(()),
            Err(e) if is_not_modified(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Answers a callback query, with an optional toast shown to the presser.
    pub async fn answer_callback(&self, id: &str, text: Option<&str>) -> Result<(), PlatformError> {
        let mut req = self
            .bot
            .answer_callback_query(CallbackQueryId(id.to_owned()));
        if let Some(text) = text.filter(|t| !t.is_empty()) {
            req = req.text(truncate_chars(text, MAX_CALLBACK_TEXT));
        }
        req.await.map(drop).map_err(|e| self.unpaced_error(&e))
    }

    /// One `sendChatAction typing` at the pacer's lowest priority: only when
    /// the bot-wide quota has a token no message is waiting for and the chat
    /// has no message on its way. `Ok(false)` when it gave way (skipped, not
    /// queued: the next renewal tries again).
    pub async fn typing(&self, to: &ChatAddress) -> Result<bool, PlatformError> {
        let to = &self.current(to);
        let mut req = self
            .bot
            .send_chat_action(TgChatId(to.chat.0), ChatAction::Typing);
        if let Some(t) = to.thread {
            req = req.message_thread_id(TgThreadId(tg_message_id(MessageId(t.0))?));
        }
        let sent = self
            .pacer
            .run_if_idle(
                &[&Lane::Chat(to.chat.0)],
                move || async move { req.await },
                classify,
            )
            .await;
        match sent {
            None => Ok(false),
            Some(r) => r.map(|_| true).map_err(|e| to_platform(&e, &self.token)),
        }
    }

    /// Replaces the bot's command menu (default scope, every language).
    pub async fn set_commands(
        &self,
        menu: Vec<teloxide::types::BotCommand>,
    ) -> Result<(), PlatformError> {
        self.bot
            .set_my_commands(menu)
            .await
            .map(drop)
            .map_err(|e| self.unpaced_error(&e))
    }

    fn unpaced_error(&self, e: &RequestError) -> PlatformError {
        if matches!(e, RequestError::RetryAfter(_)) {
            self.unpaced_429s.fetch_add(1, Ordering::Relaxed);
        }
        to_platform(e, &self.token)
    }
}

/// The HTML to try first, and whether to go straight to plain text: markup
/// without visible text (Telegram refuses it as an empty message), or HTML
/// whose visible text is over Telegram's limit while the Markdown is not (an
/// edit cannot be cut in two; sends are cut so this does not happen).
pub(crate) fn render(markdown: &str) -> Result<(String, AtomicBool), PlatformError> {
    if markdown.trim().is_empty() {
        return Err(PlatformError::Rejected("empty message text".into()));
    }
    let html = markdown_to_html(markdown);
    let shown = visible_len(&html);
    let too_long = shown > MAX_TEXT_UTF16;
    if too_long {
        tracing::info!(
            rendered = shown,
            max = MAX_TEXT_UTF16,
            "the rendered text is over Telegram's limit; sending the Markdown as plain text"
        );
    }
    let plain = AtomicBool::new(too_long || has_no_visible_text(&html));
    Ok((html, plain))
}

/// Rows of buttons as an inline keyboard; `callback_data` is the action id.
fn keyboard(rows: &[Vec<Button>]) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new(rows.iter().map(|row| {
        row.iter()
            .map(|b| InlineKeyboardButton::callback(b.label.clone(), b.action.as_str().to_owned()))
            .collect::<Vec<_>>()
    }))
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => {
            let cut = text[..i].char_indices().nth(max - 1).map_or(i, |(j, _)| j);
            format!("{}…", &text[..cut])
        }
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_text_is_capped_at_200_chars() {
        assert_eq!(truncate_chars("short", 200), "short");
        let long = "é".repeat(250);
        let t = truncate_chars(&long, 200);
        assert_eq!(t.chars().count(), 200);
        assert!(t.ends_with('…'));
    }
}
