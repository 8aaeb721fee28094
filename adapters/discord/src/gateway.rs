//! The gateway side: serenity shards → a queue → a per-channel reorder buffer
//! → normalized events in the core's sink.
//!
//! Order: serenity's shard runner reads events in order but hands each one to
//! `tokio::spawn`: [`EventHandler`] calls, `RawEventHandler` calls and the
//! framework alike (`client/dispatch.rs`; collectors run inline, but only from
//! their registration, which itself happens in a spawned task after READY,
//! and a restarted shard runner starts without them). On a multi-thread
//! runtime those tasks reach our queue in any order — tokio even runs the
//! last spawned task first — so arrival order is lost before our code runs.
//! What survives is the snowflake: message and interaction ids start with the
//! millisecond Discord created them, which is the order the user meant. So
//! the pump holds each event for [`DiscordTimings::reorder_window`] (the skew
//! between two handler tasks is scheduling latency, microseconds; the window
//! leaves orders of magnitude more and is nothing next to a model's answer)
//! and releases each channel's events in snowflake order ([`Reorder`]).
//! Channels are independent, and each channel lives on a single shard.
//!
//! A message the pump already delivered is dropped (a backfill after a new
//! session may fetch one that also came live; see `backfill.rs`).
//!
//! The pump (`pump.rs`) then normalizes one event at a time (looking up and caching
//! channel kinds, since MESSAGE_CREATE does not say whether it is a thread,
//! and, for a message that mentions roles, the bot's own roles in the guild).
//!
//! [`DiscordTimings::reorder_window`]: crate::DiscordTimings::reorder_window

use crate::adapter::Shared;
use crate::backfill;
use crate::errors::DiscordError;
use crate::marks;
use crate::normalize::{self, Context, NotAPress};
use crate::slash;
use async_trait::async_trait;
use serenity::client::{ClientBuilder, Context as SerenityContext, EventHandler};
use serenity::gateway::GatewayError;
use serenity::gateway::ShardStageUpdateEvent;
use serenity::http::HttpBuilder;
use serenity::model::application::{CommandInteraction, Interaction};
use serenity::model::channel::Message;
use serenity::model::event::ResumedEvent;
use serenity::model::gateway::{GatewayIntents, Ready};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{Inbound, InboundSink};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Events waiting for the pump.
const QUEUE: usize = 1024;
/// How long shards get to close cleanly on shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Only what the adapter needs: guild and DM messages with their content.
pub(crate) fn intents() -> GatewayIntents {
    GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
        | GatewayIntents::GUILD_MESSAGE_REACTIONS
        | GatewayIntents::DIRECT_MESSAGE_REACTIONS
}

/// An event for the pump, with its channel and snowflake for ordering.
pub(crate) struct Queued {
    pub(crate) channel: u64,
    pub(crate) id: u64,
    pub(crate) event: Event,
}

impl Queued {
    /// A message, from the gateway or fetched by a backfill.
    pub fn message(message: Message) -> Queued {
        Queued {
            channel: message.channel_id.get(),
            id: message.id.get(),
            event: Event::Message(Box::new(message)),
        }
    }
}

pub(crate) enum Event {
    Message(Box<Message>),
    Inbound(Box<Inbound>),
}

struct Handler {
    queue: mpsc::Sender<Queued>,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, ctx: SerenityContext, ready: Ready) {
        // First, before newer messages move the floors (see `seen.rs`).
        let shard = ctx.shard_id.0;
        if let Some(stop) = self.shared.sessions.ready(shard, &self.shutdown) {
            let floors = backfill::floors(&self.shared, shard, self.shared.config.shards);
            let run = backfill::run(self.shared.clone(), floors, self.queue.clone(), stop);
            tokio::spawn(run);
        }
        self.shared
            .bot_id
            .store(ready.user.id.get(), Ordering::Relaxed);
        let application = ready.application.id.get();
        let first = self.shared.slash.know_application(application);
        tracing::info!(shard = ctx.shard_id.0, "Discord gateway ready");
        self.shared.link.connected();
        if first {
            tracing::info!(
                bot = %ready.user.name,
                "invite the bot to a server: {}",
                crate::invite::invite_url(application)
            );
        }
        if let Err(e) = self.shared.slash.publish(&self.shared.rest).await {
            tracing::warn!(error = %e, "could not register the slash commands; typed commands still work");
        }
    }

    async fn resume(&self, ctx: SerenityContext, _: ResumedEvent) {
        tracing::info!(shard = ctx.shard_id.0, "Discord gateway session resumed");
        // A resume follows a lost connection, whether or not a stage update
        // said so while it was down.
        let shard = ctx.shard_id.0;
        self.shared
            .link
            .failed(format!("shard {shard}: the connection dropped (resumed)"));
        self.shared.link.connected();
    }

    async fn shard_stage_update(&self, _: SerenityContext, event: ShardStageUpdateEvent) {
        use serenity::gateway::ConnectionStage;
        if event.old == ConnectionStage::Connected && event.new != ConnectionStage::Connected {
            let shard = event.shard_id.0;
            self.shared
                .link
                .failed(format!("shard {shard}: connection lost ({})", event.new));
        }
    }

    async fn message(&self, _: SerenityContext, message: Message) {
        let guild = message.guild_id.map(|g| g.get());
        let (channel, id) = (message.channel_id.get(), message.id.get());
        self.shared.seen.saw(channel, guild, id, Instant::now());
        if let Some(guild) = guild {
            self.shared.learn_boost(guild);
        }
        if message.author.bot {
            return;
        }
        // The queue only blocks when the core is far behind: back-pressure.
        let _ = self.queue.send(Queued::message(message)).await;
    }

    async fn reaction_add(&self, _: SerenityContext, reaction: serenity::model::channel::Reaction) {
        let bot_id = self.shared.bot_id.load(Ordering::Relaxed);
        let Some(added) = crate::reactions::added(&reaction, bot_id, &self.shared.config.approvers)
        else {
            return;
        };
        let queued = Queued {
            channel: reaction.channel_id.get(),
            id: reaction.message_id.get(),
            event: Event::Inbound(Box::new(Inbound::Reaction(added))),
        };
        let _ = self.queue.send(queued).await;
    }

    async fn interaction_create(&self, _: SerenityContext, interaction: Interaction) {
        let ctx = self.context();
        let (pressed, form, seen) = match &interaction {
            Interaction::Command(command) => return self.slash_command(command).await,
            Interaction::Component(c) => (
                normalize::press(c, &ctx),
                true,
                Seen::of(
                    c.channel.as_ref(),
                    c.guild_id,
                    c.channel_id,
                    c.attachment_size_limit,
                ),
            ),
            Interaction::Modal(m) => (
                normalize::modal_submit(m, &ctx),
                false,
                Seen::of(
                    m.channel.as_ref(),
                    m.guild_id,
                    m.channel_id,
                    m.attachment_size_limit,
                ),
            ),
            // No command offers autocomplete; pings only come over HTTP.
            other => {
                return tracing::debug!(kind = ?other.kind(), "ignoring an interaction");
            }
        };
        seen.learn(&self.shared);
        let handle = normalize::Handle {
            interaction: interaction.id().get(),
            application: interaction.application_id().get(),
            token: interaction.token().to_owned(),
        };
        match pressed {
            Ok(press) => {
                // The 3-second clock runs from before the core sees it.
                self.shared.interactions.received(handle, form);
                let queued = Queued {
                    channel: seen.channel,
                    id: interaction.id().get(),
                    event: Event::Inbound(Box::new(Inbound::ButtonPress(press))),
                };
                let _ = self.queue.send(queued).await;
            }
            Err(why) => {
                if why == NotAPress::UnknownCustomId {
                    tracing::debug!("ignoring a press with an unknown custom_id");
                } else {
                    tracing::debug!(?why, "ignoring a component interaction");
                }
                self.shared.interactions.acknowledge_ignored(&handle).await;
            }
        }
    }
}

/// What an interaction tells about its channel and guild.
struct Seen {
    channel_kind: Option<(u64, u8, Option<u64>)>,
    guild: Option<u64>,
    channel: u64,
    attachment_size_limit: u32,
}

impl Seen {
    fn of(
        channel: Option<&serenity::model::channel::PartialChannel>,
        guild: Option<serenity::model::id::GuildId>,
        channel_id: serenity::model::id::ChannelId,
        attachment_size_limit: u32,
    ) -> Seen {
        Seen {
            channel_kind: normalize::interaction_channel(channel),
            guild: guild.map(|g| g.get()),
            channel: channel_id.get(),
            attachment_size_limit,
        }
    }

    /// Caches the channel's kind and the guild's upload limit.
    fn learn(&self, shared: &Shared) {
        if let Some((id, kind, parent)) = self.channel_kind {
            shared.channels.learned(id, (kind, parent));
        }
        shared
            .uploads
            .reported(self.guild, self.channel, self.attachment_size_limit);
    }
}

impl Handler {
    fn context(&self) -> Context<'_> {
        let config = &self.shared.config;
        Context {
            bot_id: self.shared.bot_id.load(Ordering::Relaxed),
            bot_roles: &[],
            approvers: &config.approvers,
            approver_roles: &config.approver_roles,
            free_channels: &config.free_channels,
        }
    }

    /// Answers a slash command at once with what was asked (within Discord's
    /// 3 s), then hands it to the core like a typed command.
    async fn slash_command(&self, command: &CommandInteraction) {
        let shared = &self.shared;
        Seen::of(
            command.channel.as_ref(),
            command.guild_id,
            command.channel_id,
            command.attachment_size_limit,
        )
        .learn(shared);
        let Some(message) = normalize::slash_command(command, &self.context()) else {
            tracing::debug!("ignoring a slash command with ids outside the contract");
            return;
        };
        let echo = slash::echo_callback(&message.text);
        if let Err(e) = shared
            .rest
            .interaction_callback(command.id.get(), &command.token, &echo)
            .await
        {
            tracing::warn!(error = %e, command = %command.data.name, "could not answer a slash command");
        }
        // Queued only once answered, so the core's reply follows the echo; a
        // callback slower than the reorder window lets newer messages of the
        // channel go first (the command still arrives).
        let queued = Queued {
            channel: command.channel_id.get(),
            id: command.id.get(),
            event: Event::Inbound(Box::new(Inbound::Message(message))),
        };
        let _ = self.queue.send(queued).await;
    }
}

/// Connects the configured shard range and forwards events until `shutdown`,
/// saving the channel marks meanwhile and once more at the end.
pub(crate) async fn run(
    shared: Arc<Shared>,
    sink: InboundSink,
    shutdown: CancellationToken,
) -> Result<(), DiscordError> {
    let saving = CancellationToken::new();
    let saver = tokio::spawn(save_marks(shared.clone(), saving.clone()));
    let result = connect(shared.clone(), sink, shutdown).await;
    saving.cancel();
    let _ = saver.await;
    shared.marks.flush().await;
    result
}

/// Writes the changed marks every [`marks::FLUSH_EVERY`] until `stop`
/// (never in the middle of a write).
async fn save_marks(shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(marks::FLUSH_EVERY) => shared.marks.flush().await,
            () = stop.cancelled() => return,
        }
    }
}

async fn connect(
    shared: Arc<Shared>,
    sink: InboundSink,
    shutdown: CancellationToken,
) -> Result<(), DiscordError> {
    let config = &shared.config;
    let mut http = HttpBuilder::new(format!("Bot {}", config.token.expose()))
        .client(shared.rest.http_client());
    if let Some(url) = &config.api_url {
        // serenity only honours a proxy with its limiter off; ours paces instead.
        http = http.proxy(url.clone()).ratelimiter_disabled(true);
    }
    let (queue, queued) = mpsc::channel(QUEUE);
    let handler = Handler {
        queue,
        shared: shared.clone(),
        shutdown: shutdown.clone(),
    };
    let mut client = ClientBuilder::new_with_http(http.build(), intents())
        .event_handler(handler)
        .await
        .map_err(|e| gateway_error(&shared, e))?;
    let manager = client.shard_manager.clone();
    let mut pump = tokio::spawn(crate::pump::pump(
        queued,
        shared.clone(),
        sink,
        shutdown.clone(),
    ));
    let watch = crate::watch::watch(manager.clone(), shared.clone(), shutdown.clone());
    let watch = tokio::spawn(watch);
    let (first, last) = config.shard_span();
    tracing::info!(
        first,
        last,
        total = config.shards,
        "starting Discord shards"
    );
    let result = {
        // serenity boots `start..=end` here (init = end - start + 1), so the
        // range's end is our inclusive last shard.
        let start = client.start_shard_range(first..last, config.shards);
        tokio::pin!(start);
        tokio::select! {
            r = &mut start => {
                watch.abort();
                return finish(pump, r.map_err(|e| gateway_error(&shared, e)));
            }
            () = shutdown.cancelled() => {}
            // The sink closed: nobody listens any more, so stop receiving.
            _ = &mut pump => {}
        }
        watch.abort();
        manager.shutdown_all().await;
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, &mut start).await;
        Ok(())
    };
    finish(pump, result)
}

fn finish<T>(pump: tokio::task::JoinHandle<()>, result: T) -> T {
    pump.abort();
    result
}

fn gateway_error(shared: &Shared, e: serenity::Error) -> DiscordError {
    match e {
        serenity::Error::Gateway(GatewayError::InvalidAuthentication) => DiscordError::Unauthorized,
        serenity::Error::Gateway(
            GatewayError::InvalidGatewayIntents | GatewayError::DisallowedGatewayIntents,
        ) => DiscordError::Intents,
        other => DiscordError::Gateway(shared.config.token.scrub(&other.to_string())),
    }
}
