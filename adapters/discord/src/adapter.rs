//! [`DiscordAdapter`]: the platform contract on top of serenity's gateway and
//! our paced REST client.

use crate::backfill::Sessions;
use crate::config::DiscordConfig;
use crate::errors::DiscordError;
use crate::gateway;
use crate::interactions::Interactions;
use crate::lookups::{BotRoles, ChannelKinds};
use crate::marks::Marks;
use crate::normalize::Handle;
use crate::recent::RecentIds;
use crate::render;
use crate::rest::Rest;
use crate::seen::Seen;
use crate::slash::SlashMenu;
use crate::typing::Typing;
use async_trait::async_trait;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{
    Activity, Attachment, ButtonPress, Capabilities, ChatAddress, CommandInfo, GaveWay,
    InboundSink, LengthUnit, MessageId, MessageRef, OutgoingFile, OutgoingMessage, Platform,
    PlatformAdapter, PlatformError, PressAnswer, Status,
};
use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;

/// How many sent message ids are remembered to recognise replies to the bot
/// when Discord omits `referenced_message`.
const SENT_MEMORY: usize = 4096;

/// State shared by the adapter, the gateway handler and the background tasks.
pub(crate) struct Shared {
    pub config: DiscordConfig,
    pub rest: Arc<Rest>,
    pub interactions: Arc<Interactions>,
    pub typing: Arc<Typing>,
    pub bot_id: AtomicU64,
    pub slash: SlashMenu,
    pub channels: ChannelKinds,
    /// The bot's own roles per guild: a mention of one addresses the bot.
    pub roles: BotRoles,
    sent: Mutex<RecentIds>,
    /// The newest messages seen per channel, where a backfill starts.
    pub seen: Seen,
    /// Which shards had a session; a new one backfills.
    pub sessions: Sessions,
    /// The newest delivered message per channel, kept across restarts.
    pub marks: Marks,
    /// The gateway connection as the operator sees it.
    pub link: switchboard_platform::Link,
    /// How large a message's files may be, per guild (boosts raise it).
    pub uploads: crate::upload_limits::UploadLimits,
}

impl Shared {
    pub fn remember_sent(&self, id: u64) {
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        sent.insert(id);
    }

    /// Looks `guild`'s boost level up once, in the background: its file
    /// limit is then known before anyone presses a button there.
    pub fn learn_boost(self: &Arc<Self>, guild: u64) {
        if !self.uploads.first_look(guild) {
            return;
        }
        let shared = Arc::clone(self);
        tokio::spawn(async move {
            match shared.rest.guild_tier(guild).await {
                Ok(tier) => shared.uploads.boosted(guild, tier),
                Err(e) => {
                    tracing::debug!(guild, error = %e, "could not look up a guild's boost level")
                }
            }
        });
    }

    /// How large the files of one message may be in `channel`: what Discord
    /// reported for its guild (or DM), else the 10 MiB every server allows.
    pub fn file_limit(&self, channel: u64) -> usize {
        let guild = self.seen.guild_of(channel);
        self.uploads.limit(guild, channel)
    }

    pub fn was_sent(&self, id: u64) -> bool {
        let sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        sent.contains(id)
    }
}

/// The channel marks kept in `state_dir` (in memory without one). Channels
/// active before a restart are noted as seen, so their first sessions fetch
/// what was posted meanwhile.
fn open_marks(
    config: &DiscordConfig,
    bot: u64,
    seen: &Seen,
    sessions: &Sessions,
) -> Result<Marks, DiscordError> {
    let Some(dir) = &config.state_dir else {
        return Ok(Marks::in_memory());
    };
    let (marks, active) =
        Marks::open(dir, bot, config.shard_span()).map_err(|e| DiscordError::State {
            path: dir.display().to_string(),
            reason: e.to_string(),
        })?;
    if !active.is_empty() {
        tracing::info!(
            channels = active.len(),
            "Discord channels were active before the restart: the first sessions fetch what was posted meanwhile"
        );
        let now = tokio::time::Instant::now();
        for (channel, mark) in active {
            seen.saw(channel, mark.guild, mark.last, now);
        }
        let (first, last) = config.shard_span();
        sessions.carry_over(first..=last);
    }
    Ok(marks)
}

/// What Discord lets the core do; edits share the channel's quota, so
/// faster ones would only queue.
fn capabilities(min_edit_interval: Duration) -> Capabilities {
    Capabilities {
        max_message_len: render::MAX_CONTENT,
        length_unit: LengthUnit::Chars,
        can_edit: true,
        buttons: true,
        threads: true,
        min_edit_interval,
        private_answers: true,
        max_upload_bytes: crate::upload_limits::DEFAULT_UPLOAD_BYTES,
        max_download_bytes: crate::download::MAX_DOWNLOAD_BYTES,
        answer_buttons: true,
        local_operator: false,
        forms: true,
        menus: true,
    }
}

/// The Discord adapter. Create it with [`DiscordAdapter::connect`], then drive
/// it with [`PlatformAdapter::run`].
pub struct DiscordAdapter {
    shared: Arc<Shared>,
    capabilities: Capabilities,
    stop: CancellationToken,
}

impl DiscordAdapter {
    /// Checks the token (`GET /users/@me`) and prepares the REST client; the
    /// gateway connects in [`PlatformAdapter::run`].
    pub async fn connect(config: DiscordConfig) -> Result<Self, DiscordError> {
        let rest = Arc::new(Rest::new(&config)?);
        let me = rest.current_user().await?;
        tracing::info!(bot = %me.username, id = me.id.get(), "Discord token accepted");
        let seen = Seen::default();
        let sessions = Sessions::default();
        let marks = open_marks(&config, me.id.get(), &seen, &sessions)?;
        let stop = CancellationToken::new();
        let timings = config.timings;
        let config_edit_interval = config
            .channel_quota
            .replenish_interval()
            .max(Duration::from_secs(1));
        let shared = Arc::new(Shared {
            interactions: Arc::new(Interactions::new(
                rest.clone(),
                timings.defer_after,
                timings.interaction_ttl,
                stop.clone(),
            )),
            typing: Arc::new(Typing::new(
                rest.clone(),
                crate::typing::Pace {
                    delay: timings.typing_delay,
                    interval: timings.typing_interval,
                    max: timings.typing_max,
                },
                stop.clone(),
            )),
            rest,
            bot_id: AtomicU64::new(me.id.get()),
            slash: SlashMenu::default(),
            channels: ChannelKinds::new(timings.lookup_retry),
            roles: BotRoles::new(timings.lookup_retry),
            config,
            sent: Mutex::new(RecentIds::new(SENT_MEMORY)),
            seen,
            sessions,
            marks,
            link: switchboard_platform::Link::default(),
            uploads: crate::upload_limits::UploadLimits::default(),
        });
        Ok(Self {
            shared,
            capabilities: capabilities(config_edit_interval),
            stop,
        })
    }

    /// How many 429s Discord answered so far (each one was retried).
    pub fn rate_limited_count(&self) -> u64 {
        self.shared.rest.rate_limited_count()
    }

    /// The bot's own user id.
    pub fn bot_user_id(&self) -> u64 {
        self.shared.bot_id.load(Ordering::Relaxed)
    }
}

impl Drop for DiscordAdapter {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The channel to post to: the thread when one is given, else the chat.
fn channel_of(to: &ChatAddress) -> Result<u64, PlatformError> {
    if to.platform != Platform::Discord {
        return Err(PlatformError::Rejected(format!(
            "a {} chat is not a Discord channel",
            to.platform
        )));
    }
    let id = to.thread.map(|t| t.get()).unwrap_or(to.chat.get());
    u64::try_from(id)
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| PlatformError::Rejected(format!("{id} is not a Discord channel id")))
}

fn message_id(id: MessageId) -> Result<u64, PlatformError> {
    u64::try_from(id.get())
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| PlatformError::Rejected(format!("{id} is not a Discord message id")))
}

#[async_trait]
impl PlatformAdapter for DiscordAdapter {
    fn platform(&self) -> Platform {
        Platform::Discord
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    fn pacer_waits(&self) -> Option<switchboard_platform::WaitSnapshot> {
        Some(self.shared.rest.pacer.waits())
    }

    /// With marks on disk, a restart's backfill may fetch again what the
    /// previous process delivered after its last write (a crash): the core
    /// then drops the repeats.
    fn may_redeliver(&self) -> bool {
        self.shared.config.state_dir.is_some()
    }

    fn link(&self) -> switchboard_platform::LinkStatus {
        self.shared.link.status()
    }

    async fn run(
        &self,
        sink: InboundSink,
        shutdown: CancellationToken,
    ) -> Result<(), PlatformError> {
        let stop = shutdown.clone();
        let result = gateway::run(self.shared.clone(), sink, shutdown).await;
        if let Err(e) = &result {
            self.shared.link.failed(e);
        }
        self.shared.link.stopped();
        if stop.is_cancelled() {
            self.stop.cancel();
        }
        result.map_err(|e| match e {
            DiscordError::Unreachable(_) | DiscordError::Gateway(_) => {
                PlatformError::Network(e.to_string())
            }
            other => PlatformError::Rejected(other.to_string()),
        })
    }

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let channel = channel_of(to)?;
        let body = render::message_body(&message, true)?;
        let id = self.shared.rest.create_message(channel, &body).await?;
        self.shared.remember_sent(id);
        let id = i64::try_from(id)
            .map_err(|_| PlatformError::Rejected(format!("message id {id} out of range")))?;
        Ok(MessageRef {
            chat: *to,
            id: MessageId(id),
        })
    }

    /// The limit Discord last reported for the chat's guild (or DM), else
    /// the 10 MiB every server allows.
    fn upload_limit(&self, chat: ChatAddress) -> usize {
        match channel_of(&chat) {
            Ok(channel) => self.shared.file_limit(channel),
            Err(_) => self.capabilities.max_upload_bytes,
        }
    }

    /// What people may send there: the same limit as [`Self::upload_limit`].
    fn download_limit(&self, chat: ChatAddress) -> u64 {
        self.upload_limit(chat) as u64
    }

    async fn send_voice(
        &self,
        voice: switchboard_platform::OutgoingVoice,
    ) -> Result<MessageRef, PlatformError> {
        let channel = channel_of(&voice.to)?;
        let limit = self.upload_limit(voice.to);
        let id = self
            .shared
            .rest
            .create_voice_message(channel, &voice, limit)
            .await?;
        self.shared.remember_sent(id);
        let id = i64::try_from(id)
            .map_err(|_| PlatformError::Rejected(format!("message id {id} out of range")))?;
        Ok(MessageRef {
            chat: voice.to,
            id: MessageId(id),
        })
    }

    async fn send_file(&self, file: OutgoingFile) -> Result<MessageRef, PlatformError> {
        let channel = channel_of(&file.to)?;
        let limit = self.upload_limit(file.to);
        let id = self
            .shared
            .rest
            .create_file_message(channel, &file, limit)
            .await?;
        self.shared.remember_sent(id);
        let id = i64::try_from(id)
            .map_err(|_| PlatformError::Rejected(format!("message id {id} out of range")))?;
        Ok(MessageRef {
            chat: file.to,
            id: MessageId(id),
        })
    }

    /// Fetches the message again for a fresh signed URL, then streams it.
    async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn AsyncWrite + Unpin + Send),
        max_bytes: u64,
    ) -> Result<u64, PlatformError> {
        let limit = crate::download::AttachmentRef::parse(&attachment.handle.0)
            .map_or(self.capabilities.max_download_bytes, |a| {
                self.shared.file_limit(a.channel) as u64
            });
        let max = max_bytes.min(limit);
        let stall = self.shared.config.timings.download_stall;
        self.shared
            .rest
            .download(attachment, dest, max, stall)
            .await
    }

    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        let channel = channel_of(&target.chat)?;
        let body = render::message_body(&message, false)?;
        self.shared
            .rest
            .edit_message(channel, message_id(target.id)?, &body)
            .await
            .map_err(PlatformError::from)
    }

    async fn answer_press(
        &self,
        press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError> {
        let handle = Handle::decode(&press.handle)
            .ok_or_else(|| PlatformError::Rejected("not a Discord button press".into()))?;
        self.shared.interactions.answer(&handle, answer).await
    }

    /// A deferred update (type 6) now, unless the press is answered already.
    async fn defer_press(&self, press: &ButtonPress) -> Result<(), PlatformError> {
        let handle = Handle::decode(&press.handle)
            .ok_or_else(|| PlatformError::Rejected("not a Discord button press".into()))?;
        self.shared.interactions.defer_now(&handle).await
    }

    fn status_reactions(&self) -> bool {
        self.shared.config.reactions.is_some()
    }

    async fn set_status(
        &self,
        target: &MessageRef,
        status: Status,
        previous: Option<Status>,
    ) -> Result<bool, PlatformError> {
        let Some(emoji) = &self.shared.config.reactions else {
            return Err(PlatformError::Unsupported(
                "react to messages (REACTIONS=off)",
            ));
        };
        let channel = channel_of(&target.chat)?;
        let previous = previous.map(|p| emoji.emoji(p));
        self.shared
            .rest
            .react(
                channel,
                message_id(target.id)?,
                emoji.emoji(status),
                previous,
            )
            .await
            .map_err(PlatformError::from)
    }

    async fn wait_turn(&self, chat: &ChatAddress, _call: GaveWay, within: Duration) {
        match channel_of(chat) {
            Ok(channel) => self.shared.rest.wait_idle(channel, within).await,
            Err(_) => tokio::time::sleep(within).await,
        }
    }

    async fn activity(&self, chat: &ChatAddress, activity: Activity) -> Result<(), PlatformError> {
        let channel = channel_of(chat)?;
        match activity {
            Activity::Typing => self.shared.typing.start(channel),
            Activity::Idle | Activity::Paused => self.shared.typing.stop(channel),
            // Not a turn: another user's typing indicator keeps running.
            Activity::Answered => {}
        }
        Ok(())
    }

    /// Registered as slash commands now, or when the gateway's READY names
    /// the application.
    async fn set_commands(&self, commands: &[CommandInfo]) -> Result<(), PlatformError> {
        self.shared.slash.set(commands);
        Ok(self.shared.slash.publish(&self.shared.rest).await?)
    }
}
