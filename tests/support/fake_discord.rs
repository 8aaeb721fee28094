//! Fake Discord on 127.0.0.1: REST under `/api/v10` (axum) and a gateway
//! (tokio-tungstenite), as strict as Discord about tokens, shapes and limits.
//! It enforces Discord's rate limits by default (5 message creates/edits per
//! 5 s per channel, 50 requests per second per bot; see [`DiscordLimits`]),
//! can inject 429s (per channel or global), records every REST call and
//! dispatches MESSAGE_CREATE / INTERACTION_CREATE to the shard that owns them;
//! a press is only dispatched for a button the message really carries. The
//! bot's guild member (with the roles a test gave it) is served as Discord does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cdn;
mod components;
mod events;
mod gateway;
mod guilds;
mod history;
mod limits;
mod modals;
mod outage;
mod reactions;
mod rest;
mod uploads;
mod voice;

#[allow(unused_imports)] // only the media tests attach files
pub use cdn::FakeFile;
#[allow(unused_imports)] // not every test crate presses buttons
pub use events::{Press, UserMessage};
#[allow(unused_imports)] // only the rate-limit tests scale the limits
pub use limits::{DiscordLimits, Rate};
#[allow(unused_imports)] // only the form and menu tests choose or submit
pub use modals::{first_select, Choice};
#[allow(unused_imports)] // only the resilience tests break connections
pub use outage::Disruption;
#[allow(unused_imports)] // only the upload tests read files
pub use uploads::{Upload, MAX_UPLOAD_BYTES};

use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The bot token the fake accepts (`Authorization: Bot TOKEN`, identify `token`).
pub const TOKEN: &str = "fake-discord.bot-token.0123456789";
/// The bot's user id (a snowflake that fits in i64).
pub const BOT_ID: u64 = 1_100_000_000_000_000_001;
pub const BOT_NAME: &str = "switchboard";
pub const APP_ID: u64 = 1_100_000_000_000_000_002;
/// The default guild every text channel and thread belongs to.
pub const GUILD_ID: u64 = 1_100_000_000_000_000_003;
/// GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT | GUILD_MESSAGE_REACTIONS |
/// DIRECT_MESSAGE_REACTIONS.
pub const INTENTS: u64 = (1 << 9) | (1 << 12) | (1 << 15) | (1 << 10) | (1 << 13);
/// Discord's epoch (2015-01-01) in Unix milliseconds.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

/// Channel types the fake knows.
pub const TEXT: u8 = 0;
pub const DM: u8 = 1;
pub const PUBLIC_THREAD: u8 = 11;

#[derive(Debug, Clone)]
pub struct FakeDiscordOptions {
    /// Total shards `GET /gateway/bot` recommends and Identify must carry.
    pub shards: u32,
    pub heartbeat_interval_ms: u64,
    /// Interactions not answered within this are "Unknown interaction" (Discord: 3 s).
    pub interaction_expiry: Duration,
    /// Intents a bot may identify with (privileged ones "enabled in the portal").
    pub allowed_intents: u64,
    /// Rate limits answered with 429s (default: Discord's own); `None` lifts them.
    pub limits: Option<DiscordLimits>,
}

impl Default for FakeDiscordOptions {
    fn default() -> Self {
        Self {
            shards: 1,
            heartbeat_interval_ms: 1_000,
            interaction_expiry: Duration::from_secs(3),
            allowed_intents: INTENTS,
            limits: Some(DiscordLimits::default()),
        }
    }
}

/// One REST call as the fake saw it. `path` is relative to `/api/v10`.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub path: String,
    /// The query string, without `?` (empty when none).
    pub query: String,
    pub body: Value,
    pub status: u16,
    pub at: Instant,
}

/// One Identify (op 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identify {
    pub shard: [u32; 2],
    pub intents: u64,
    pub token_ok: bool,
}

/// An accepted interaction callback.
#[derive(Debug, Clone)]
pub struct Callback {
    pub interaction: u64,
    pub kind: u64,
    pub data: Value,
}

/// An accepted webhook followup or `@original` edit of an interaction.
#[derive(Debug, Clone)]
pub struct Followup {
    pub interaction: u64,
    pub edit_original: bool,
    pub body: Value,
}

impl Followup {
    pub fn ephemeral(&self) -> bool {
        self.body["flags"].as_u64().is_some_and(|f| f & 64 != 0)
    }
}

/// A channel the fake serves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Channel {
    pub kind: u8,
    pub guild: Option<u64>,
    pub parent: Option<u64>,
}

/// Interaction types the fake dispatches.
pub(crate) const COMMAND: u8 = 2;
pub(crate) const COMPONENT: u8 = 3;
pub(crate) const MODAL_SUBMIT: u8 = 5;

/// An interaction the fake dispatched.
#[derive(Debug, Clone)]
pub(crate) struct Interaction {
    pub token: String,
    /// The message whose component was used (0: none, a slash command or a
    /// modal one opened).
    pub message: u64,
    pub channel: u64,
    /// When Discord created it (its snowflake's time): initial responses
    /// are refused past `interaction_expiry` from here.
    pub created: Instant,
    /// The callback type once acknowledged.
    pub acked: Option<u64>,
    /// [`COMMAND`], [`COMPONENT`] or [`MODAL_SUBMIT`].
    pub kind: u8,
    /// Who used it, with their roles.
    pub user: u64,
    pub roles: Vec<u64>,
    /// The modal its response opened (a type 9 callback's `data`).
    pub modal: Option<Value>,
}

/// A gateway session (one per identified shard); survives disconnects for
/// resume, with the dispatches sent since READY kept for replay.
pub(crate) struct Session {
    pub id: String,
    pub seq: u64,
    pub conn: u64,
    pub tx: Option<mpsc::UnboundedSender<gateway::Out>>,
    /// Dispatches after READY, oldest first, as `(seq, frame)`.
    pub log: VecDeque<(u64, String)>,
}

/// Everything the fake knows; one lock, never held across an await.
#[derive(Default)]
pub(crate) struct Inner {
    pub last_id: u64,
    pub channels: HashMap<u64, Channel>,
    pub messages: HashMap<u64, Value>,
    pub order: Vec<u64>,
    pub calls: Vec<Call>,
    pub callbacks: Vec<Callback>,
    pub followups: Vec<Followup>,
    pub interactions: HashMap<u64, Interaction>,
    pub sessions: HashMap<u32, Session>,
    pub identifies: Vec<Identify>,
    pub heartbeats: usize,
    pub resumes: usize,
    /// Injected gateway faults and what the fake saw of the client meanwhile.
    pub faults: outage::Faults,
    pub channel_429s: HashMap<u64, VecDeque<f64>>,
    pub global_429s: VecDeque<f64>,
    pub rate_limited: usize,
    pub next_conn: u64,
    pub limits: Option<limits::Limits>,
    /// Channels whose history the bot may not read (403).
    pub history_denied: std::collections::HashSet<u64>,
    /// Messages whose edits are refused (403 Missing Permissions).
    pub refused_edits: std::collections::HashSet<u64>,
    /// The application's global commands, as the last bulk overwrite set them.
    pub commands: Vec<Value>,
    /// `GET /channels/{id}` answers 500 this many more times, by channel.
    pub lookup_failures: HashMap<u64, usize>,
    /// The bot's roles, by guild.
    pub bot_roles: HashMap<u64, Vec<u64>>,
    /// `GET /guilds/{id}/members/{user}` answers 500 this many more times, by guild.
    pub member_failures: HashMap<u64, usize>,
    /// Injected (non-global) 429s of the next command bulk overwrites.
    pub command_429s: VecDeque<f64>,
    /// Delays before the next interaction callbacks are answered (each is
    /// carried out at once, only its answer is late: a slow network).
    pub slow_callbacks: VecDeque<Duration>,
    /// Files the bot attached to its messages, in order.
    pub uploads: Vec<Upload>,
    /// Files users attached, served by the CDN route.
    pub cdn: Vec<cdn::CdnFile>,
    /// Attachment ids the CDN route was asked for.
    pub cdn_hits: Vec<u64>,
    /// Boosted guilds' level and upload limit (others: 0 and [`MAX_UPLOAD_BYTES`]).
    pub upload_limits: HashMap<u64, (u8, usize)>,
    /// How many times `GET /guilds/{id}` was answered.
    pub guild_lookups: usize,
    /// The bot's own reactions, by message.
    pub bot_reactions: HashMap<u64, Vec<String>>,
    /// Snowflakes made for late deliveries ([`Inner::id_created_ago`]).
    pub late_ids: u64,
}

impl Inner {
    /// A snowflake created `ago` (an event delivered late), unique but out
    /// of order with the ids made since.
    pub fn id_created_ago(&mut self, ago: Duration) -> u64 {
        let ms = std::time::SystemTime::now()
            .checked_sub(ago)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64)
            .unwrap_or(DISCORD_EPOCH_MS);
        self.late_ids += 1;
        (ms.saturating_sub(DISCORD_EPOCH_MS) << 22) | (0x3F_0000 + self.late_ids)
    }

    /// A fresh, increasing snowflake with the current time in it.
    pub fn next_id(&mut self) -> u64 {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(DISCORD_EPOCH_MS);
        let id = (ms.saturating_sub(DISCORD_EPOCH_MS) << 22).max(self.last_id + 1);
        self.last_id = id;
        id
    }
}

pub(crate) struct Shared {
    pub options: FakeDiscordOptions,
    /// This server's base URL, which attachment URLs point at.
    pub api_url: String,
    pub gateway_url: String,
    pub inner: Mutex<Inner>,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running fake Discord. Dropping it stops both servers.
pub struct FakeDiscord {
    /// REST base for `DISCORD_API_URL` (serenity appends `/api/v10/...`).
    pub api_url: String,
    /// The gateway URL `GET /gateway` hands out.
    pub gateway_url: String,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

pub fn user_json(id: u64, name: &str, bot: bool) -> Value {
    json!({
        "id": id.to_string(),
        "username": name,
        "global_name": name,
        "discriminator": "0",
        "avatar": null,
        "bot": bot,
    })
}

pub fn bot_user_json() -> Value {
    user_json(BOT_ID, BOT_NAME, true)
}

/// A message object as Discord sends it, with the fields of a plain message;
/// callers override `type`, `flags` or `mentions` where theirs differ.
pub fn message_json(
    id: u64,
    channel: u64,
    guild: Option<u64>,
    author: Value,
    content: &str,
    components: Value,
) -> Value {
    let mut msg = json!({
        "id": id.to_string(),
        "channel_id": channel.to_string(),
        "author": author,
        "content": content,
        "timestamp": timestamp(),
        "edited_timestamp": null,
        "tts": false,
        "mention_everyone": false,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": false,
        "type": 0,
        "flags": 0,
        "components": components,
    });
    if let Some(guild) = guild {
        msg["guild_id"] = json!(guild.to_string());
    }
    msg
}

fn timestamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

impl FakeDiscord {
    pub async fn start() -> FakeDiscord {
        Self::start_with(FakeDiscordOptions::default()).await
    }

    pub async fn start_with(options: FakeDiscordOptions) -> FakeDiscord {
        let rest_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ws_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api_url = format!("http://{}", rest_listener.local_addr().unwrap());
        let gateway_url = format!("ws://{}", ws_listener.local_addr().unwrap());
        let inner = Inner {
            limits: options.limits.map(limits::Limits::new),
            ..Inner::default()
        };
        let shared = Arc::new(Shared {
            options,
            api_url: api_url.clone(),
            gateway_url: gateway_url.clone(),
            inner: Mutex::new(inner),
        });
        let router = rest::router(shared.clone()).layer(axum::extract::DefaultBodyLimit::max(
            uploads::MAX_BOOSTED_UPLOAD_BYTES + (2 << 20),
        ));
        let rest_task = tokio::spawn(async move {
            let _ = axum::serve(rest_listener, router).await;
        });
        let ws_task = tokio::spawn(gateway::serve(ws_listener, shared.clone()));
        FakeDiscord {
            api_url,
            gateway_url,
            shared,
            tasks: vec![rest_task, ws_task],
        }
    }

    /// Registers a text channel of the default guild.
    pub fn add_text_channel(&self, id: u64) {
        self.add_channel_in(GUILD_ID, id);
    }

    /// Registers a text channel of `guild`.
    pub fn add_channel_in(&self, guild: u64, id: u64) {
        self.insert_channel(id, TEXT, Some(guild), None);
    }

    /// Registers a public thread under `parent` (in the parent's guild).
    pub fn add_thread(&self, id: u64, parent: u64) {
        let guild = self
            .shared
            .lock()
            .channels
            .get(&parent)
            .and_then(|c| c.guild)
            .unwrap_or(GUILD_ID);
        self.insert_channel(id, PUBLIC_THREAD, Some(guild), Some(parent));
    }

    /// Registers a DM channel with the bot.
    pub fn add_dm(&self, id: u64) {
        self.insert_channel(id, DM, None, None);
    }

    fn insert_channel(&self, id: u64, kind: u8, guild: Option<u64>, parent: Option<u64>) {
        self.shared.lock().channels.insert(
            id,
            Channel {
                kind,
                guild,
                parent,
            },
        );
    }

    /// A guild id whose events go to `shard` of `total` (`(id >> 22) % total`).
    pub fn guild_for_shard(shard: u32, total: u32) -> u64 {
        let base = GUILD_ID >> 22;
        let offset =
            (u64::from(shard) + u64::from(total) - base % u64::from(total)) % u64::from(total);
        (base + offset) << 22
    }

    /// Waits until `n` shards are identified and connected.
    pub async fn wait_ready(&self, n: usize) -> bool {
        self.wait_for(|f| f.connected_shards().len() >= n).await
    }

    /// The shard ids with a live connection.
    pub fn connected_shards(&self) -> Vec<u32> {
        let inner = self.shared.lock();
        let mut shards: Vec<u32> = inner
            .sessions
            .iter()
            .filter(|(_, s)| s.tx.is_some())
            .map(|(id, _)| *id)
            .collect();
        shards.sort_unstable();
        shards
    }

    pub fn identifies(&self) -> Vec<Identify> {
        self.shared.lock().identifies.clone()
    }

    pub fn heartbeats(&self) -> usize {
        self.shared.lock().heartbeats
    }

    pub fn resumes(&self) -> usize {
        self.shared.lock().resumes
    }

    /// Polls `check` every 10 ms for up to 15 s.
    pub async fn wait_for(&self, check: impl Fn(&FakeDiscord) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if check(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The next `times` message calls (create/edit) in `channel` answer 429.
    pub fn rate_limit_channel(&self, channel: u64, times: usize, retry_after: f64) {
        let mut inner = self.shared.lock();
        let queue = inner.channel_429s.entry(channel).or_default();
        queue.extend(std::iter::repeat_n(retry_after, times));
    }

    /// The next `times` authenticated REST calls answer a global 429.
    pub fn rate_limit_global(&self, times: usize, retry_after: f64) {
        let mut inner = self.shared.lock();
        inner
            .global_429s
            .extend(std::iter::repeat_n(retry_after, times));
    }

    /// The next `times` look-ups of `channel` (`GET /channels/{id}`) answer
    /// 500, as Discord does in an outage.
    pub fn fail_channel_lookups(&self, channel: u64, times: usize) {
        *self
            .shared
            .lock()
            .lookup_failures
            .entry(channel)
            .or_default() += times;
    }

    /// The next `times` command registrations (bulk overwrites) answer a
    /// route 429 with `retry_after` seconds.
    pub fn rate_limit_commands(&self, times: usize, retry_after: f64) {
        let mut inner = self.shared.lock();
        inner
            .command_429s
            .extend(std::iter::repeat_n(retry_after, times));
    }

    /// The next interaction callback is carried out at once but answered only
    /// after `delay` (the response is slow, not the effect).
    pub fn slow_next_callback(&self, delay: Duration) {
        self.shared.lock().slow_callbacks.push_back(delay);
    }

    /// How many 429s the fake answered (injected and enforced).
    pub fn rate_limited(&self) -> usize {
        self.shared.lock().rate_limited
    }

    /// 429s answered because a limit was really exceeded, by scope
    /// ("channel", "global"); injected ones are not counted here.
    pub fn limit_hits(&self) -> HashMap<&'static str, usize> {
        self.shared
            .lock()
            .limits
            .as_ref()
            .map(|l| l.hits.clone())
            .unwrap_or_default()
    }

    /// Edits of `message` are refused from now on (403, as when the bot lost
    /// a permission in the channel); presses on it still arrive.
    pub fn refuse_edits(&self, message: u64) {
        self.shared.lock().refused_edits.insert(message);
    }

    /// Stores a message as if the bot had posted it earlier (say, an older
    /// version with other `custom_id`s): one row of buttons with these ids.
    pub fn plant_bot_message(&self, channel: u64, content: &str, custom_ids: &[&str]) -> u64 {
        let mut inner = self.shared.lock();
        let guild = inner.channels.get(&channel).and_then(|c| c.guild);
        let id = inner.next_id();
        let buttons: Vec<Value> = custom_ids
            .iter()
            .map(|c| json!({ "type": 2, "style": 2, "label": "old", "custom_id": c }))
            .collect();
        let msg = message_json(
            id,
            channel,
            guild,
            bot_user_json(),
            content,
            json!([{ "type": 1, "components": buttons }]),
        );
        inner.messages.insert(id, msg);
        inner.order.push(id);
        id
    }

    /// The files the bot attached to messages in `channel`, oldest first.
    pub fn uploads(&self, channel: u64) -> Vec<Upload> {
        let inner = self.shared.lock();
        inner
            .uploads
            .iter()
            .filter(|u| u.channel == channel)
            .cloned()
            .collect()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared.lock().calls.clone()
    }

    /// Accepted calls (2xx) with this method whose path matches `path`.
    pub fn accepted(&self, method: &str, path: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method && c.path == path && c.status < 300)
            .collect()
    }

    /// The messages the bot posted in `channel`, oldest first, as they are now
    /// (after edits and interaction updates).
    pub fn bot_messages(&self, channel: u64) -> Vec<Value> {
        let inner = self.shared.lock();
        inner
            .order
            .iter()
            .filter_map(|id| inner.messages.get(id))
            .filter(|m| id_eq(&m["channel_id"], channel) && id_eq(&m["author"]["id"], BOT_ID))
            .cloned()
            .collect()
    }

    /// The newest bot message in `channel` that still has buttons.
    pub fn card(&self, channel: u64) -> Option<Value> {
        self.bot_messages(channel)
            .into_iter()
            .rev()
            .find(|m| !custom_ids(m).is_empty())
    }

    pub fn message(&self, id: u64) -> Option<Value> {
        self.shared.lock().messages.get(&id).cloned()
    }

    /// The registered global (slash) commands.
    pub fn slash_commands(&self) -> Vec<Value> {
        self.shared.lock().commands.clone()
    }

    pub fn callbacks(&self) -> Vec<Callback> {
        self.shared.lock().callbacks.clone()
    }

    pub fn followups(&self) -> Vec<Followup> {
        self.shared.lock().followups.clone()
    }

    /// How many typing calls `channel` received.
    pub fn typing_calls(&self, channel: u64) -> usize {
        self.accepted("POST", &format!("/channels/{channel}/typing"))
            .len()
    }
}

/// The `custom_id`s of a message's buttons, row by row (not its menus').
pub fn custom_ids(message: &Value) -> Vec<String> {
    message["components"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == 2)
        .filter_map(|b| b["custom_id"].as_str().map(str::to_owned))
        .collect()
}

/// A message's id as a number.
pub fn message_id(message: &Value) -> u64 {
    message["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Whether a JSON snowflake (a string) is `id`.
pub fn id_eq(value: &Value, id: u64) -> bool {
    value.as_str().and_then(|s| s.parse::<u64>().ok()) == Some(id)
}

/// The shard that receives a guild's events; DMs go to shard 0.
pub fn shard_of(guild: Option<u64>, total: u32) -> u32 {
    match guild {
        Some(guild) => ((guild >> 22) % u64::from(total.max(1))) as u32,
        None => 0,
    }
}
