//! `TelegramAdapter`: start-up (`getMe`), dispatch of normalized updates and
//! the `PlatformAdapter` implementation.

use crate::activity::{typing_loop, Typing};
use crate::album::Albums;
use crate::bad_update::SkippedUpdates;
use crate::config::TelegramConfig;
use crate::errors::{startup_error, TelegramError};
use crate::fit::{fits, fitting_chunks};
use crate::normalize::{Action, BotIdentity, Normalizer};
use crate::presses::{PendingPresses, Presses};
use crate::send::{Outbound, MAX_TEXT_UTF16};
use async_trait::async_trait;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{
    measure, Activity, Attachment, ButtonPress, Capabilities, ChatAddress, CommandInfo, DraftId,
    Drafts, GaveWay, Inbound, InboundSink, LengthUnit, MessageRef, OutgoingFile, OutgoingMessage,
    Pending, Platform, PlatformAdapter, PlatformError, PressAnswer, Status,
};
use teloxide::prelude::Requester;
use teloxide::types::{Update, UpdateKind};
use teloxide::Bot;
use tokio::io::AsyncWrite;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The answer to a press still waiting when the adapter stops.
const RESTARTING_NOTICE: &str = "The bot is restarting; please press again in a moment.";

/// The Telegram side of Switchboard. Cheap to share: clone the `Arc` it lives in.
pub struct TelegramAdapter {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub config: TelegramConfig,
    pub bot: Bot,
    pub me: BotIdentity,
    pub normalizer: Normalizer,
    pub out: Outbound,
    pub presses: Presses,
    pub typing: Typing,
    pub caps: Capabilities,
    /// Ends helper tasks (typing loops, press timeouts) when `run` ends.
    pub stop: CancellationToken,
    pub webhook_addr: watch::Sender<Option<SocketAddr>>,
    /// Updates that did not parse, skipped.
    pub skipped: SkippedUpdates,
    /// The connection as the operator sees it.
    pub link: switchboard_platform::Link,
}

impl TelegramAdapter {
    /// Checks the token with `getMe` and prepares the state directory.
    pub async fn connect(config: TelegramConfig) -> Result<Self, TelegramError> {
        let client = teloxide::net::default_reqwest_settings()
            .build()
            .map_err(|e| TelegramError::Client(config.token.scrub(&e.to_string())))?;
        let bot = Bot::with_client(config.token.expose(), client).set_api_url(config.api_base()?);
        let me = bot
            .get_me()
            .await
            .map_err(|e| startup_error("getMe", &e, &config.token))?;
        let me = BotIdentity {
            id: i64::try_from(me.user.id.0).unwrap_or_default(),
            // teloxide's `Me::username()` panics without one; a bot always has one.
            username: me.user.username.clone().unwrap_or_default(),
        };
        tokio::fs::create_dir_all(&config.state_dir)
            .await
            .map_err(|e| TelegramError::State {
                path: config.state_dir.display().to_string(),
                detail: e.to_string(),
            })?;
        tracing::info!(
            bot_id = me.id,
            username = %me.username,
            "connected to Telegram; users write to the bot at https://t.me/{}",
            me.username
        );
        let caps = Capabilities {
            max_message_len: MAX_TEXT_UTF16,
            length_unit: LengthUnit::Utf16,
            can_edit: true,
            buttons: true,
            threads: true,
            // A chat's quota would hold faster edits back anyway.
            min_edit_interval: config.limits.per_chat.replenish_interval(),
            private_answers: true,
            max_upload_bytes: crate::upload::MAX_UPLOAD_BYTES,
            max_download_bytes: crate::download::MAX_DOWNLOAD_BYTES,
            answer_buttons: true,
            local_operator: false,
            forms: false,
            menus: false,
        };
        let inner = Inner {
            normalizer: Normalizer::new(me.clone(), config.approvers.clone()),
            out: Outbound::new(bot.clone(), config.token.clone(), config.limits),
            presses: Arc::new(PendingPresses::default()),
            typing: Typing::default(),
            caps,
            stop: CancellationToken::new(),
            webhook_addr: watch::Sender::new(None),
            skipped: SkippedUpdates::default(),
            link: switchboard_platform::Link::default(),
            me,
            bot,
            config,
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// 429 answers received from Telegram so far (each was waited out and retried).
    pub fn rate_limited_count(&self) -> u64 {
        self.inner.out.rate_limited_count()
    }

    /// Updates skipped since start because they do not parse (each logged
    /// by its `update_id` only; polling moves the offset past them).
    pub fn skipped_update_count(&self) -> u64 {
        self.inner.skipped.count()
    }

    /// The bot's numeric id, from `getMe`.
    pub fn bot_id(&self) -> i64 {
        self.inner.me.id
    }

    /// The bot's `@username` without the `@`.
    pub fn bot_username(&self) -> &str {
        &self.inner.me.username
    }

    /// In webhook mode, the address the webhook server listens on, once bound
    /// (useful with port 0). Waits for `run` to bind it.
    pub async fn webhook_addr(&self) -> Option<SocketAddr> {
        let mut rx = self.inner.webhook_addr.subscribe();
        let addr = rx.wait_for(Option::is_some).await.ok()?;
        *addr
    }

    /// Callback queries forwarded and not answered yet.
    pub fn pending_presses(&self) -> usize {
        self.inner.presses.len()
    }
}

impl Inner {
    /// Normalizes one update and hands it over in order, or holds it in
    /// `albums` when it is part of a media group; side replies (answers
    /// to unusable callbacks) run on their own tasks so they never hold up the
    /// reader. Returns the receipt to wait for before the update is
    /// confirmed (none: nothing was handed over). `Err` when the core has
    /// gone away.
    pub async fn dispatch(
        self: &Arc<Self>,
        update: &Update,
        sink: &InboundSink,
        albums: &mut Albums,
    ) -> Result<Option<Pending>, PlatformError> {
        let group = match &update.kind {
            UpdateKind::Message(msg) => msg.media_group_id().map(|g| g.0.as_str()),
            _ => None,
        };
        match (self.normalizer.update(update), group) {
            (Action::Forward(Inbound::Message(part)), Some(group)) => {
                albums.add(group, i64::from(update.id.0), part, Instant::now());
            }
            (Action::Forward(inbound), _) => {
                if let Inbound::ButtonPress(press) = &inbound {
                    self.watch_press(press);
                }
                let pending = sink
                    .hand_over(inbound)
                    .await
                    .map_err(|_| PlatformError::Closed)?;
                return Ok(Some(pending));
            }
            (Action::AnswerEmpty(id), _) => {
                tracing::info!(
                    update_id = update.id.0,
                    "ignoring a callback query without a usable action id"
                );
                let this = self.clone();
                tokio::spawn(async move {
                    if let Err(e) = this.out.answer_callback(&id, None).await {
                        tracing::debug!(error = %e, "could not answer an ignored callback query");
                    }
                });
            }
            (Action::Ignore(reason), _) => {
                tracing::debug!(update_id = update.id.0, reason, "ignoring Telegram update");
            }
        }
        Ok(None)
    }

    /// Hands over the albums whose window has passed, each once the core has
    /// it. Returns the update ids of the parts done with (their album
    /// acknowledged, or not for the bot), for the webhook's spool; parts of
    /// an album not acknowledged when this is cut short are not among them.
    /// `Err` when the core has gone away.
    pub async fn flush_albums(
        &self,
        albums: &mut Albums,
        sink: &InboundSink,
        done: &mut Vec<i64>,
    ) -> Result<(), PlatformError> {
        for (parts, album) in albums.take_due_parts(Instant::now()) {
            if let Some(album) = album {
                sink.deliver(Inbound::Message(album))
                    .await
                    .map_err(|_| PlatformError::Closed)?;
            }
            done.extend(parts);
        }
        Ok(())
    }

    /// Registers a forwarded press; answers it empty if the core has not
    /// within `press_answer_timeout`, so the client's spinner always stops.
    fn watch_press(self: &Arc<Self>, press: &ButtonPress) {
        let id = press.handle.0.clone();
        self.presses.insert(&id);
        let this = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                // Stopping: the core will not answer it now; say so rather than
                // leave the user's button spinning (best effort, briefly).
                _ = this.stop.cancelled() => {
                    if this.presses.take(&id) {
                        let notice = Some(RESTARTING_NOTICE);
                        let answer = this.out.answer_callback(&id, notice);
                        if !matches!(tokio::time::timeout(Duration::from_secs(2), answer).await, Ok(Ok(()))) {
                            tracing::debug!("could not answer a press at shutdown");
                        }
                    }
                }
                _ = tokio::time::sleep(this.config.press_answer_timeout) => {
                    if this.presses.take(&id) {
                        tracing::warn!("button press not answered by the core in time; answering it empty");
                        if let Err(e) = this.out.answer_callback(&id, None).await {
                            tracing::debug!(error = %e, "late callback answer failed");
                        }
                    }
                }
            }
        });
    }

    fn start_typing(self: &Arc<Self>, chat: ChatAddress) {
        let Some((generation, cancel)) = self.typing.begin(chat, &self.stop) else {
            return;
        };
        let this = self.clone();
        tokio::spawn(async move {
            let (interval, max) = (this.config.typing_interval, this.config.typing_max);
            typing_loop(&this.out, chat, interval, max, cancel).await;
            this.typing.finished(&chat, generation);
        });
    }
}

#[async_trait]
impl PlatformAdapter for TelegramAdapter {
    fn platform(&self) -> Platform {
        Platform::Telegram
    }

    fn unreadable_inbound(&self) -> u64 {
        self.skipped_update_count()
    }

    fn link(&self) -> switchboard_platform::LinkStatus {
        self.inner.link.status()
    }

    fn capabilities(&self) -> &Capabilities {
        &self.inner.caps
    }

    fn pacer_waits(&self) -> Option<switchboard_platform::WaitSnapshot> {
        Some(self.inner.out.pacer.waits())
    }

    /// Always: a webhook delivery is retried by Telegram, and an update
    /// the core kept just before a crash, but the poller had not confirmed
    /// yet, comes again after the restart.
    fn may_redeliver(&self) -> bool {
        true
    }

    /// Long polling, or the webhook server when configured, until `shutdown`.
    async fn run(
        &self,
        sink: InboundSink,
        shutdown: CancellationToken,
    ) -> Result<(), PlatformError> {
        let result = match self.inner.config.webhook.clone() {
            Some(hook) => crate::webhook::serve(&self.inner, &hook, &sink, &shutdown).await,
            None => crate::polling::poll(&self.inner, &sink, &shutdown).await,
        };
        self.inner.stop.cancel();
        self.inner.link.stopped();
        result
    }

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        if fits(&message.text, MAX_TEXT_UTF16) {
            return self.inner.out.send(to, &message).await;
        }
        // The core chunks on the Markdown, but Telegram counts the rendered
        // text, which can be longer: such a chunk is cut again here (as is the
        // text of a caller that did not chunk).
        let chunks = fitting_chunks(&message.text, MAX_TEXT_UTF16);
        let last = chunks.len().saturating_sub(1);
        let mut sent = None;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let part = OutgoingMessage {
                text: chunk,
                buttons: if i == last {
                    message.buttons.clone()
                } else {
                    Vec::new()
                },
                reply_to: if i == 0 { message.reply_to } else { None },
                // Telegram has no menus (`Capabilities::menus` is off).
                menu: None,
            };
            sent = Some(self.inner.out.send(to, &part).await?);
        }
        sent.ok_or(PlatformError::Rejected("empty message".into()))
    }

    /// Replaces the text (and keyboard). An edit cannot be cut in two, so
    /// Markdown that fits but renders over Telegram's limit goes in as plain
    /// text.
    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        let len = measure(&message.text, LengthUnit::Utf16);
        if len > MAX_TEXT_UTF16 {
            return Err(PlatformError::TooLong {
                len,
                max: MAX_TEXT_UTF16,
            });
        }
        self.inner.out.edit(target, &message).await
    }

    /// Private chats (positive ids), unless `TELEGRAM_DRAFTS=off` or
    /// Telegram refused a draft there: one update a `per_chat` interval, as
    /// edits; refreshed within Telegram's 30 s.
    fn drafts(&self, chat: &ChatAddress) -> Option<Drafts> {
        let id = chat.chat.0;
        let on = self.inner.config.drafts && id > 0 && !self.inner.out.drafts.refused(id);
        on.then(|| Drafts {
            min_interval: self.inner.caps.min_edit_interval,
            lifetime: crate::drafts::DRAFT_LIFETIME,
        })
    }

    /// Like an edit, a draft cannot be cut in two: Markdown that fits but
    /// renders over Telegram's limit goes in as plain text.
    async fn draft(
        &self,
        to: &ChatAddress,
        id: DraftId,
        text: &str,
    ) -> Result<bool, PlatformError> {
        if !self.inner.config.drafts {
            return Err(PlatformError::Unsupported(
                "stream drafts (TELEGRAM_DRAFTS=off)",
            ));
        }
        let len = measure(text, LengthUnit::Utf16);
        if len > MAX_TEXT_UTF16 {
            return Err(PlatformError::TooLong {
                len,
                max: MAX_TEXT_UTF16,
            });
        }
        self.inner.out.draft(to, id, text).await
    }

    async fn send_file(&self, file: OutgoingFile) -> Result<MessageRef, PlatformError> {
        self.inner.out.send_file(&file).await
    }

    async fn send_voice(
        &self,
        voice: switchboard_platform::OutgoingVoice,
    ) -> Result<MessageRef, PlatformError> {
        self.inner.out.send_voice(&voice).await
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn AsyncWrite + Unpin + Send),
        max_bytes: u64,
    ) -> Result<u64, PlatformError> {
        self.inner.download(attachment, dest, max_bytes).await
    }

    async fn set_commands(&self, commands: &[CommandInfo]) -> Result<(), PlatformError> {
        let menu = crate::commands::menu(commands);
        let count = menu.len();
        self.inner.out.set_commands(menu).await?;
        tracing::info!(commands = count, "Telegram command menu published");
        Ok(())
    }

    /// Answers the callback query (once), then edits the card for `Update`.
    async fn answer_press(
        &self,
        press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError> {
        if matches!(answer, PressAnswer::Form(_)) {
            return Err(PlatformError::Unsupported("open forms"));
        }
        let id = &press.handle.0;
        let owned = self.inner.presses.take(id);
        let toast = match &answer {
            PressAnswer::Private(text) => Some(text.as_str()),
            PressAnswer::Ack | PressAnswer::Update(_) | PressAnswer::Form(_) => None,
        };
        if owned {
            if let Err(e) = self.inner.out.answer_callback(id, toast).await {
                // Too late or already answered: the edit below still matters.
                tracing::debug!(error = %e, "answerCallbackQuery failed");
            }
        } else {
            tracing::debug!("press already answered (timeout or duplicate); not answering again");
        }
        match (answer, press.message) {
            (PressAnswer::Update(message), Some(target)) => self.edit(&target, message).await,
            _ => Ok(()),
        }
    }

    fn status_reactions(&self) -> bool {
        self.inner.config.reactions.is_some()
    }

    async fn set_status(
        &self,
        target: &MessageRef,
        status: Status,
        _previous: Option<Status>,
    ) -> Result<bool, PlatformError> {
        let Some(emoji) = &self.inner.config.reactions else {
            return Err(PlatformError::Unsupported(
                "react to messages (REACTIONS=off)",
            ));
        };
        self.inner.out.react(target, emoji.emoji(status)).await
    }

    async fn wait_turn(&self, chat: &ChatAddress, call: GaveWay, within: Duration) {
        self.inner.out.wait_idle(chat, call, within).await;
    }

    async fn activity(&self, chat: &ChatAddress, activity: Activity) -> Result<(), PlatformError> {
        match activity {
            Activity::Typing => self.inner.start_typing(*chat),
            Activity::Idle | Activity::Paused => self.inner.typing.end(chat),
            // Not a turn: another user's typing indicator keeps running.
            Activity::Answered => {}
        }
        Ok(())
    }
}
