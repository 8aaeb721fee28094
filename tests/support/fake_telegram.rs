//! Fake Telegram Bot API on 127.0.0.1, as strict as the real one about shapes
//! and limits: `POST /bot{token}/{Method}` with PascalCase (any case) method
//! names, the `{ok,result}` envelope, 401 for a wrong token, 4096 UTF-16 units
//! of text after entity parsing, 64-byte `callback_data`, "can't parse
//! entities" for bad HTML, "message is not modified", `setWebhook` only for
//! HTTPS on ports 443/80/88/8443, `allowed_updates` honoured, `getUpdates`
//! offsets read as the Bot API server reads them (an offset more than 10 past
//! the queue's end, as after a restarted `update_id` sequence, confirms
//! nothing and gets the oldest updates), `mention`/`bot_command` entities
//! found as Telegram finds them, `sendMessageDraft` for private chats only
//! (see `drafts`), injectable 429s, and Telegram's flood limits
//! enforced by default (sliding windows, see [`PublishedLimits`]). It never
//! answers 5xx (teloxide sleeps 10 s on those) except to `getUpdates` when a
//! test breaks polling ([`PollFault`]; the adapter's own `getUpdates` does
//! not go through teloxide's retries). Every call is recorded for
//! assertions; helpers queue updates.

mod api;
mod documents;
mod drafts;
mod entities;
mod files;
mod html;
mod limits;
mod poll_faults;
mod reactions;
mod voice;

#[allow(unused_imports)] // only the resilience tests break polling
pub use poll_faults::PollFault;

#[allow(unused_imports)] // only the media tests tell photos from documents
pub use documents::{FileField, StoredDocument, MAX_DOCUMENT_BYTES, MAX_PHOTO_BYTES};
#[allow(unused_imports)] // only the streaming tests read drafts
pub use drafts::StoredDraft;
#[allow(unused_imports)] // only the media tests read the limit
pub use files::MAX_DOWNLOAD_BYTES;
pub use html::Entity;
#[allow(unused_imports)] // only the flood-control tests use the windows
pub use limits::{PublishedLimits, SlidingWindow, Window};

use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The default test token; the bot id is its numeric prefix.
pub const TOKEN: &str = "7000001:AAtestTOKENsecret_do-not-leak";
pub const BOT_ID: i64 = 7_000_001;
pub const BOT_USERNAME: &str = "switchboard_test_bot";

/// "Bad Request" text teloxide maps to `MessageNotModified`.
const NOT_MODIFIED: &str = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";

#[derive(Debug, Clone)]
pub struct FakeOptions {
    pub token: String,
    /// Answer 429 when these limits are exceeded (default: Telegram's own;
    /// tests scale them down with [`PublishedLimits::scaled_down`]).
    pub enforce_limits: Option<PublishedLimits>,
}

impl Default for FakeOptions {
    fn default() -> Self {
        Self {
            token: TOKEN.to_owned(),
            enforce_limits: Some(PublishedLimits::default()),
        }
    }
}

impl FakeOptions {
    /// No flood limits: for tests about other things that run the adapter with
    /// fast limits to stay quick. Anything asserting "no 429" must not use it.
    pub fn lenient() -> Self {
        Self {
            enforce_limits: None,
            ..Self::default()
        }
    }
}

/// A user who talks to the bot.
#[derive(Debug, Clone)]
pub struct FakeUser {
    pub id: i64,
    pub first_name: String,
}

impl FakeUser {
    pub fn new(id: i64, first_name: &str) -> Self {
        Self {
            id,
            first_name: first_name.to_owned(),
        }
    }

    fn json(&self) -> Value {
        json!({"id": self.id, "is_bot": false, "first_name": self.first_name})
    }
}

/// Where a message is posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// The private chat with the sending user (chat id = user id).
    Dm,
    /// A supergroup (negative id).
    Group(i64),
    /// A forum topic in a supergroup.
    Topic { chat: i64, thread: i64 },
}

/// A queued update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pushed {
    pub update_id: i64,
    pub chat_id: i64,
    pub message_id: i64,
}

/// One recorded API call.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub params: Value,
    pub ok: bool,
    pub error_code: Option<u16>,
    pub description: Option<String>,
    /// When the fake answered it.
    pub at: tokio::time::Instant,
}

/// A message as the fake holds it now (after edits).
#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub chat_id: i64,
    pub message_id: i64,
    pub thread_id: Option<i64>,
    pub from_bot: bool,
    /// The sender (the bot's id for the bot's messages).
    pub from_id: i64,
    /// Visible text after entity parsing.
    pub text: String,
    pub entities: Vec<Entity>,
    pub parse_mode: Option<String>,
    pub reply_markup: Option<Value>,
    pub reply_to: Option<i64>,
    pub edits: u32,
    pub date: i64,
}

#[derive(Default)]
struct Chat {
    json: Value,
    is_group: bool,
    threads: HashSet<i64>,
    next_message_id: i64,
}

struct Inner {
    token: String,
    /// Every `getUpdates` fails this way while set.
    poll_fault: Option<PollFault>,
    updates: VecDeque<(i64, Value)>,
    next_update_id: i64,
    chats: HashMap<i64, Chat>,
    messages: HashMap<(i64, i64), StoredMessage>,
    calls: Vec<Call>,
    inject_429: HashMap<i64, VecDeque<u32>>,
    /// Groups upgraded to supergroups: old id → new id.
    migrated: HashMap<i64, i64>,
    inject_parse_errors: HashMap<i64, usize>,
    limits: Option<limits::Limits>,
    open_callbacks: HashSet<String>,
    next_callback: u64,
    webhook: Option<(String, Option<String>)>,
    /// Enforced 429s by limit ("per chat", "per group", "per bot").
    limit_hits: HashMap<&'static str, usize>,
    /// The last `allowed_updates` set by getUpdates or setWebhook (empty: the default).
    allowed_updates: Vec<String>,
    /// Updates never queued because their kind was not allowed.
    filtered_updates: usize,
    /// The menu of the last accepted `setMyCommands`: (command, description).
    commands: Vec<(String, String)>,
    /// Updates served as given text instead of their queued JSON (see
    /// [`FakeTelegram::push_unparsed`]).
    unparsed: HashMap<i64, String>,
    /// Documents the bot sent, in order.
    documents: Vec<StoredDocument>,
    /// Files users "sent", served by `getFile` and the download route.
    files: Vec<files::HostedFile>,
    /// Paths the download route was asked for.
    file_hits: Vec<String>,
    /// Drafts accepted (`sendMessageDraft`) and chats refusing them.
    drafts: drafts::Drafts,
}

struct Shared {
    inner: Mutex<Inner>,
    updates_added: Notify,
    call_recorded: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct FakeTelegram {
    shared: Arc<Shared>,
    addr: SocketAddr,
    server: JoinHandle<()>,
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
}

impl FakeTelegram {
    /// A fake enforcing Telegram's real flood limits.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(FakeOptions::default()).await
    }

    /// A fake without flood limits (see [`FakeOptions::lenient`]).
    pub async fn start_lenient() -> std::io::Result<Self> {
        Self::start_with(FakeOptions::lenient()).await
    }

    pub async fn start_with(options: FakeOptions) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                token: options.token,
                poll_fault: None,
                updates: VecDeque::new(),
                next_update_id: 100_000,
                chats: HashMap::new(),
                messages: HashMap::new(),
                calls: Vec::new(),
                inject_429: HashMap::new(),
                migrated: HashMap::new(),
                inject_parse_errors: HashMap::new(),
                limits: options.enforce_limits.map(limits::Limits::new),
                open_callbacks: HashSet::new(),
                next_callback: 1,
                webhook: None,
                limit_hits: HashMap::new(),
                allowed_updates: Vec::new(),
                filtered_updates: 0,
                commands: Vec::new(),
                unparsed: HashMap::new(),
                documents: Vec::new(),
                files: Vec::new(),
                file_hits: Vec::new(),
                drafts: drafts::Drafts::default(),
            }),
            updates_added: Notify::new(),
            call_recorded: Notify::new(),
        });
        let app = Router::new()
            .route("/{bot}/{method}", any(api::handle))
            .route("/file/{bot}/{*path}", axum::routing::get(files::serve))
            // Uploads reach 50 MB; the fake refuses larger ones itself.
            .layer(axum::extract::DefaultBodyLimit::max(
                MAX_DOCUMENT_BYTES + (1 << 20),
            ))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            shared,
            addr,
            server,
        })
    }

    /// Base URL to give teloxide (`TELEGRAM_API_URL`).
    pub fn api_url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn token(&self) -> String {
        self.shared.lock().token.clone()
    }

    // ----- updates -------------------------------------------------------

    /// A text message, with the `mention` and `bot_command` entities Telegram
    /// would attach.
    pub fn message(&self, at: Where, from: &FakeUser, text: &str) -> Pushed {
        self.push_message(
            at,
            from,
            json!({"text": text, "entities": entities::find(text)}),
            None,
        )
    }

    /// A text message replying to message `reply_to` of the same chat.
    pub fn reply(&self, at: Where, from: &FakeUser, text: &str, reply_to: i64) -> Pushed {
        self.push_message(
            at,
            from,
            json!({"text": text, "entities": entities::find(text)}),
            Some(reply_to),
        )
    }

    /// A photo, with or without a caption.
    pub fn photo(&self, at: Where, from: &FakeUser, caption: Option<&str>) -> Pushed {
        let mut body = json!({"photo": [{"file_id": "AgAD", "file_unique_id": "AQAD",
            "width": 640, "height": 480, "file_size": 4096}]});
        if let Some(c) = caption {
            body["caption"] = json!(c);
            body["caption_entities"] = entities::find(c);
        }
        self.push_message(at, from, body, None)
    }

    /// A message with any body (media, `media_group_id`, …) merged into the
    /// usual fields.
    pub fn media(&self, at: Where, from: &FakeUser, body: Value) -> Pushed {
        self.push_message(at, from, body, None)
    }

    /// An `edited_message` update for an earlier message.
    pub fn edited(&self, at: Where, from: &FakeUser, message_id: i64, text: &str) -> i64 {
        let (_, chat, thread) = self.chat_for(at, from);
        let mut msg = json!({"message_id": message_id, "date": now_secs(), "edit_date": now_secs(),
            "chat": chat, "from": from.json(), "text": text});
        add_thread(&mut msg, thread);
        self.push_raw(json!({"edited_message": msg}))
    }

    /// A button press on the bot's message `message_id`; returns the query id.
    pub fn callback(&self, at: Where, from: &FakeUser, message_id: i64, data: &str) -> String {
        let (id, update) = self.callback_update(at, from, message_id, data);
        self.push_raw(update);
        id
    }

    /// Builds a button press without queuing it (for webhook deliveries):
    /// its query id (open until answered) and the update.
    pub fn callback_update(
        &self,
        at: Where,
        from: &FakeUser,
        message_id: i64,
        data: &str,
    ) -> (String, Value) {
        let (chat_id, chat, _) = self.chat_for(at, from);
        let mut inner = self.shared.lock();
        let id = format!("cbq-{}", inner.next_callback);
        inner.next_callback += 1;
        inner.open_callbacks.insert(id.clone());
        let message = match inner.messages.get(&(chat_id, message_id)) {
            Some(m) => message_json(m, &chat),
            None => json!({"message_id": message_id, "date": 0, "chat": chat}),
        };
        let update = json!({"callback_query": {"id": id, "from": from.json(),
            "chat_instance": format!("ci{chat_id}"), "data": data, "message": message}});
        (id, update)
    }

    /// Queues any JSON as an update (an `update_id` is added when missing),
    /// unless its kind is not in the bot's `allowed_updates`: like Telegram,
    /// the fake then never creates it (see [`FakeTelegram::filtered_updates`]).
    pub fn push_raw(&self, mut update: Value) -> i64 {
        let mut inner = self.shared.lock();
        if !api::allowed(&inner.allowed_updates, &update) {
            inner.filtered_updates += 1;
            return 0;
        }
        let id = match update.get("update_id").and_then(Value::as_i64) {
            Some(id) => id,
            None => {
                let id = inner.next_update_id;
                inner.next_update_id += 1;
                if let Some(obj) = update.as_object_mut() {
                    obj.insert("update_id".into(), json!(id));
                }
                id
            }
        };
        inner.next_update_id = inner.next_update_id.max(id + 1);
        inner.updates.push_back((id, update));
        drop(inner);
        self.shared.updates_added.notify_waiters();
        id
    }

    /// Queues an update served verbatim as `object` (JSON object text without
    /// `update_id`, which the fake inserts), even text no JSON parser accepts:
    /// a lone surrogate escape (`\ud800`), nesting past any depth limit. The
    /// real Bot API has relayed such text. Returns the update id.
    pub fn push_unparsed(&self, object: &str) -> i64 {
        let body = object.trim_start();
        let body = body.strip_prefix('{').unwrap_or(body).trim_start();
        let mut inner = self.shared.lock();
        let id = inner.next_update_id;
        inner.next_update_id += 1;
        let sep = if body.starts_with('}') { "" } else { "," };
        let text = format!("{{\"update_id\":{id}{sep}{body}");
        inner.unparsed.insert(id, text);
        inner.updates.push_back((id, json!({"update_id": id})));
        drop(inner);
        self.shared.updates_added.notify_waiters();
        id
    }

    /// Emulates Telegram restarting the `update_id` sequence: after a week
    /// without updates it numbers the next ones from a new random value, which
    /// may be below the bot's offset. Updates created from now on are numbered
    /// from `start`. Telegram does this only once it holds no updates (it keeps
    /// them 24 hours), so any still queued are dropped as expired.
    pub fn restart_update_ids(&self, start: i64) {
        let mut inner = self.shared.lock();
        inner.updates.clear();
        inner.next_update_id = start;
    }

    /// Builds a message update without queuing it (for webhook deliveries).
    pub fn message_update(&self, at: Where, from: &FakeUser, text: &str) -> Value {
        let (update, _) = self.build_message(
            at,
            from,
            json!({"text": text, "entities": entities::find(text)}),
            None,
        );
        update
    }

    /// Builds a message update with any body without queuing it (webhook
    /// deliveries of media).
    pub fn media_update(&self, at: Where, from: &FakeUser, body: Value) -> Value {
        self.build_message(at, from, body, None).0
    }

    /// Makes `at` known (chats exist once someone wrote there).
    pub fn ensure_chat(&self, at: Where, from: &FakeUser) -> i64 {
        self.chat_for(at, from).0
    }

    fn push_message(
        &self,
        at: Where,
        from: &FakeUser,
        body: Value,
        reply_to: Option<i64>,
    ) -> Pushed {
        let (update, mut pushed) = self.build_message(at, from, body, reply_to);
        pushed.update_id = self.push_raw(update);
        pushed
    }

    fn build_message(
        &self,
        at: Where,
        from: &FakeUser,
        body: Value,
        reply_to: Option<i64>,
    ) -> (Value, Pushed) {
        let (chat_id, chat, thread) = self.chat_for(at, from);
        let mut inner = self.shared.lock();
        let message_id = next_message_id(&mut inner, chat_id);
        let mut msg = json!({"message_id": message_id, "date": now_secs(), "chat": chat,
            "from": from.json()});
        if let (Some(m), Some(b)) = (msg.as_object_mut(), body.as_object()) {
            m.extend(b.clone());
        }
        add_thread(&mut msg, thread);
        let replied = reply_to.or(thread).and_then(|r| {
            inner
                .messages
                .get(&(chat_id, r))
                .map(|m| message_json(m, &chat))
                .or_else(|| {
                    // The topic's root is a service message.
                    thread.filter(|t| *t == r).map(|t| {
                        json!({"message_id": t, "date": 0, "chat": chat,
                            "from": {"id": 1, "is_bot": false, "first_name": "Admin"},
                            "forum_topic_created": {"name": "topic", "icon_color": 7_322_096},
                            "message_thread_id": t, "is_topic_message": true})
                    })
                })
        });
        if let Some(r) = replied {
            msg["reply_to_message"] = r;
        }
        inner.messages.insert(
            (chat_id, message_id),
            StoredMessage {
                chat_id,
                message_id,
                thread_id: thread,
                from_bot: false,
                from_id: from.id,
                text: msg["text"].as_str().unwrap_or_default().to_owned(),
                entities: Vec::new(),
                parse_mode: None,
                reply_markup: None,
                reply_to,
                edits: 0,
                date: now_secs(),
            },
        );
        (
            json!({"message": msg}),
            Pushed {
                update_id: 0,
                chat_id,
                message_id,
            },
        )
    }

    fn chat_for(&self, at: Where, from: &FakeUser) -> (i64, Value, Option<i64>) {
        let mut inner = self.shared.lock();
        let (id, json, is_group, thread) = match at {
            Where::Dm => (
                from.id,
                json!({"id": from.id, "type": "private", "first_name": from.first_name}),
                false,
                None,
            ),
            Where::Group(id) => (
                id,
                json!({"id": id, "type": "supergroup", "title": format!("Group {id}")}),
                true,
                None,
            ),
            Where::Topic { chat, thread } => (
                chat,
                json!({"id": chat, "type": "supergroup", "title": format!("Forum {chat}"), "is_forum": true}),
                true,
                Some(thread),
            ),
        };
        let chat = inner.chats.entry(id).or_insert_with(|| Chat {
            next_message_id: 1,
            ..Chat::default()
        });
        if chat.json.is_null() || thread.is_some() {
            chat.json = json.clone();
        }
        chat.is_group = is_group;
        if let Some(t) = thread {
            chat.threads.insert(t);
            chat.next_message_id = chat.next_message_id.max(t + 1);
        }
        (id, chat.json.clone(), thread)
    }

    // ----- fault injection ----------------------------------------------

    /// The next `times` sends/edits to `chat_id` answer 429 with `retry_after`.
    /// Upgrades the group `old` to the supergroup `new` (a negative id, as
    /// `-100…`): from now on `old` refuses sends and chat actions with
    /// `migrate_to_chat_id`, and `new` is a chat with the same members.
    pub fn upgrade_to_supergroup(&self, old: i64, new: i64) {
        let mut inner = self.shared.lock();
        let chat = inner.chats.get(&old).expect("a known group");
        let mut json = chat.json.clone();
        json["id"] = json!(new);
        json["type"] = json!("supergroup");
        let copy = Chat {
            json,
            is_group: true,
            threads: HashSet::new(),
            next_message_id: 1,
        };
        inner.chats.insert(new, copy);
        inner.migrated.insert(old, new);
    }

    pub fn fail_with_429(&self, chat_id: i64, times: usize, retry_after: u32) {
        let mut inner = self.shared.lock();
        let queue = inner.inject_429.entry(chat_id).or_default();
        queue.extend(std::iter::repeat_n(retry_after, times));
    }

    /// The next `times` HTML sends/edits to `chat_id` are refused with
    /// "can't parse entities", as Telegram does for HTML it dislikes.
    pub fn fail_html(&self, chat_id: i64, times: usize) {
        *self
            .shared
            .lock()
            .inject_parse_errors
            .entry(chat_id)
            .or_default() += times;
    }

    // ----- assertions ----------------------------------------------------

    pub fn calls(&self) -> Vec<Call> {
        self.shared.lock().calls.clone()
    }

    /// The calls from index `from` on (for a watcher that reads them as they
    /// come), and the index to ask from next time.
    pub fn calls_since(&self, from: usize) -> (Vec<Call>, usize) {
        let inner = self.shared.lock();
        let new = inner.calls.get(from..).unwrap_or_default().to_vec();
        (new, inner.calls.len())
    }

    /// Calls to `method` (case-insensitive), in order.
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|c| c.method.eq_ignore_ascii_case(method))
            .cloned()
            .collect()
    }

    /// The bot's messages in `chat_id`, by message id, as they are now.
    pub fn bot_messages(&self, chat_id: i64) -> Vec<StoredMessage> {
        let inner = self.shared.lock();
        let mut out: Vec<StoredMessage> = inner
            .messages
            .values()
            .filter(|m| m.chat_id == chat_id && m.from_bot)
            .cloned()
            .collect();
        out.sort_by_key(|m| m.message_id);
        out
    }

    /// The documents and photos the bot sent to `chat_id`, in order.
    pub fn documents(&self, chat_id: i64) -> Vec<StoredDocument> {
        let inner = self.shared.lock();
        inner
            .documents
            .iter()
            .filter(|d| d.chat_id == chat_id)
            .cloned()
            .collect()
    }

    pub fn stored(&self, chat_id: i64, message_id: i64) -> Option<StoredMessage> {
        self.shared
            .lock()
            .messages
            .get(&(chat_id, message_id))
            .cloned()
    }

    /// 429 answers given so far (injected and enforced).
    pub fn rate_limited_responses(&self) -> usize {
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|c| c.error_code == Some(429))
            .count()
    }

    /// Updates still queued (not confirmed by an offset).
    pub fn pending_updates(&self) -> usize {
        self.shared.lock().updates.len()
    }

    /// The registered webhook: (url, secret token).
    pub fn webhook(&self) -> Option<(String, Option<String>)> {
        self.shared.lock().webhook.clone()
    }

    /// Updates not created because the bot's `allowed_updates` excluded them.
    pub fn filtered_updates(&self) -> usize {
        self.shared.lock().filtered_updates
    }

    /// The bot's command menu, as the last accepted `setMyCommands` set it.
    pub fn commands(&self) -> Vec<(String, String)> {
        self.shared.lock().commands.clone()
    }

    /// Enforced 429s by the limit that was hit.
    pub fn limit_hits(&self) -> HashMap<&'static str, usize> {
        self.shared.lock().limit_hits.clone()
    }

    /// Checks `check` after every recorded call (and every 50 ms) until it
    /// holds or `timeout` passes.
    pub async fn wait_until(&self, timeout: Duration, check: impl Fn(&Self) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let recorded = self.shared.call_recorded.notified();
            tokio::pin!(recorded);
            recorded.as_mut().enable();
            if check(self) {
                return true;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return false;
            }
            let nap = (deadline - now).min(Duration::from_millis(50));
            let _ = tokio::time::timeout(nap, recorded).await;
        }
    }
}

fn next_message_id(inner: &mut Inner, chat_id: i64) -> i64 {
    let chat = inner.chats.entry(chat_id).or_insert_with(|| Chat {
        next_message_id: 1,
        ..Chat::default()
    });
    let id = chat.next_message_id.max(1);
    chat.next_message_id = id + 1;
    id
}

fn add_thread(msg: &mut Value, thread: Option<i64>) {
    if let Some(t) = thread {
        msg["message_thread_id"] = json!(t);
        msg["is_topic_message"] = json!(true);
    }
}

fn message_json(m: &StoredMessage, chat: &Value) -> Value {
    let from = if m.from_bot {
        json!({"id": BOT_ID, "is_bot": true, "first_name": "Switchboard", "username": BOT_USERNAME})
    } else {
        json!({"id": m.from_id, "is_bot": false, "first_name": format!("User {}", m.from_id)})
    };
    let mut v = json!({"message_id": m.message_id, "date": m.date, "chat": chat, "from": from,
        "text": m.text});
    if !m.entities.is_empty() {
        v["entities"] = Value::Array(m.entities.iter().map(Entity::to_json).collect());
    }
    if let Some(markup) = &m.reply_markup {
        v["reply_markup"] = markup.clone();
    }
    add_thread(&mut v, m.thread_id);
    if m.edits > 0 {
        v["edit_date"] = json!(now_secs());
    }
    v
}

/// POSTs `body` to a webhook like Telegram does; returns the HTTP status.
pub async fn post_webhook(
    url: &str,
    secret: Option<&str>,
    body: String,
) -> Result<u16, reqwest::Error> {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body);
    if let Some(s) = secret {
        req = req.header("X-Telegram-Bot-Api-Secret-Token", s);
    }
    Ok(req.send().await?.status().as_u16())
}
