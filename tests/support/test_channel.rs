//! An in-memory chat platform for end-to-end tests: a [`PlatformAdapter`] that
//! records every outbound operation in order, keeps the current state of each
//! message, and lets a test inject messages and button presses.
//!
//! ```ignore
//! let channel = TestChannel::new();
//! // … switchboard::start(&config, vec![channel.clone()], shutdown) …
//! channel.dm(1, "hello").await;
//! let log = channel.wait_for("the answer", |log| log.has_text("Hi!")).await;
//! let card = channel.card().await; // the latest approval card
//! channel.press(1, &card.action('y')).await;
//! ```
#![allow(clippy::panic)] // a failed wait or a misused fixture fails the test

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use switchboard_platform::{
    stream_to, ActionId, Activity, Addressed, Attachment, AttachmentKind, ButtonPress,
    Capabilities, ChatAddress, ChatId, ChatKind, FileKind, Inbound, InboundMessage, InboundSink,
    LengthUnit, MessageId, MessageRef, OutgoingFile, OutgoingMessage, Platform, PlatformAdapter,
    PlatformError, PressAnswer, PressHandle, User, UserId,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long [`TestChannel::wait_for`] waits before failing the test.
pub const WAIT: Duration = Duration::from_secs(20);

/// One outbound operation, in the order the core performed it.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Send {
        chat: ChatAddress,
        id: MessageId,
        text: String,
        /// Action ids of the buttons, row by row flattened.
        actions: Vec<String>,
        reply_to: Option<MessageId>,
    },
    Edit {
        id: MessageId,
        text: String,
        actions: Vec<String>,
    },
    Answer {
        user: UserId,
        action: String,
        answer: PressAnswer,
    },
    Activity {
        chat: ChatAddress,
        activity: Activity,
    },
    /// A file the bot sent (`send_file`).
    File {
        chat: ChatAddress,
        name: String,
        kind: FileKind,
        caption: Option<String>,
        bytes: Vec<u8>,
    },
}

/// What a registered attachment's download does.
#[derive(Debug, Clone)]
pub enum Download {
    /// Serves these bytes, in 64 KB chunks.
    Bytes(Vec<u8>),
    /// Serves these bytes, then sends nothing more (a stalled transfer).
    Stall(Vec<u8>),
    /// Waits for the test's go-ahead, then serves these bytes.
    Held(Vec<u8>, Arc<tokio::sync::Notify>),
}

impl Download {
    fn bytes(&self) -> &[u8] {
        match self {
            Download::Bytes(b) | Download::Stall(b) | Download::Held(b, _) => b,
        }
    }
}

/// How long a download here may send nothing before it counts as stalled.
pub const TEST_STALL: Duration = Duration::from_millis(300);

/// The current state of a message the bot sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub id: MessageId,
    pub chat: ChatAddress,
    pub text: String,
    pub actions: Vec<String>,
    /// How many times it was edited (including press `Update`s).
    pub edits: usize,
}

/// Everything the channel saw, as a snapshot.
#[derive(Debug, Clone, Default)]
pub struct Log {
    pub ops: Vec<Op>,
    /// Messages the bot sent, by id, in their current state.
    pub messages: BTreeMap<i64, Sent>,
}

impl Log {
    /// Bot messages in the order they were first sent.
    pub fn sent(&self) -> Vec<&Sent> {
        self.messages.values().collect()
    }

    /// Current texts of the bot messages in `chat`, oldest first.
    pub fn texts_in(&self, chat: i64) -> Vec<String> {
        self.messages
            .values()
            .filter(|m| m.chat.chat == ChatId(chat))
            .map(|m| m.text.clone())
            .collect()
    }

    /// Current texts of every bot message, oldest first.
    pub fn texts(&self) -> Vec<String> {
        self.messages.values().map(|m| m.text.clone()).collect()
    }

    /// Whether some bot message currently reads exactly `text`.
    pub fn has_text(&self, text: &str) -> bool {
        self.messages.values().any(|m| m.text == text)
    }

    /// Whether some bot message currently contains `needle`.
    pub fn any_contains(&self, needle: &str) -> bool {
        self.messages.values().any(|m| m.text.contains(needle))
    }

    /// How many bot messages currently contain `needle`.
    pub fn count_containing(&self, needle: &str) -> usize {
        self.messages
            .values()
            .filter(|m| m.text.contains(needle))
            .count()
    }

    /// The bot message currently containing `needle` (the latest one).
    pub fn find(&self, needle: &str) -> Option<&Sent> {
        self.messages
            .values()
            .rev()
            .find(|m| m.text.contains(needle))
    }

    /// The latest bot message that carries approval buttons (`ap:` actions).
    pub fn card(&self) -> Option<Card> {
        self.messages
            .values()
            .rev()
            .find(|m| is_approval(&m.actions))
            .map(Card::from)
    }

    /// How many approval cards were sent so far.
    pub fn cards_ever(&self) -> usize {
        self.ops
            .iter()
            .filter(|op| matches!(op, Op::Send { actions, .. } if is_approval(actions)))
            .count()
    }

    /// Every press answer, in order.
    pub fn answers(&self) -> Vec<(UserId, String, PressAnswer)> {
        self.ops
            .iter()
            .filter_map(|op| match op {
                Op::Answer {
                    user,
                    action,
                    answer,
                } => Some((*user, action.clone(), answer.clone())),
                _ => None,
            })
            .collect()
    }

    /// The texts `message` showed over time: the sent text, then every edit.
    pub fn history_of(&self, id: MessageId) -> Vec<String> {
        self.ops
            .iter()
            .filter_map(|op| match op {
                Op::Send { id: i, text, .. } | Op::Edit { id: i, text, .. } if *i == id => {
                    Some(text.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// Number of `edit` calls the core made (press `Update`s not included).
    pub fn edit_count(&self) -> usize {
        self.ops
            .iter()
            .filter(|op| matches!(op, Op::Edit { .. }))
            .count()
    }
}

impl fmt::Display for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "--- operations ({}) ---", self.ops.len())?;
        for (i, op) in self.ops.iter().enumerate() {
            writeln!(f, "{i:>3}: {op:?}")?;
        }
        writeln!(f, "--- messages ({}) ---", self.messages.len())?;
        for m in self.messages.values() {
            writeln!(
                f,
                "#{} chat {} edits {} buttons {:?}\n{}\n",
                m.id, m.chat.chat, m.edits, m.actions, m.text
            )?;
        }
        Ok(())
    }
}

/// An approval card: a message with `ap:<id>:<code>` buttons.
#[derive(Debug, Clone)]
pub struct Card {
    pub id: MessageId,
    pub text: String,
    pub actions: Vec<String>,
}

impl Card {
    /// The action id whose last segment is `code` (`ap:<id>:y` for `'y'`).
    #[track_caller]
    pub fn action(&self, code: char) -> String {
        let suffix = format!(":{code}");
        self.actions
            .iter()
            .find(|a| a.ends_with(&suffix))
            .cloned()
            .unwrap_or_else(|| panic!("card has no `{code}` button: {:?}", self.actions))
    }

    /// The approval id carried by the buttons (`ap:<id>:<code>`).
    pub fn approval_id(&self) -> switchboard::domain::ApprovalId {
        self.actions
            .first()
            .and_then(|a| a.split(':').nth(1))
            .unwrap_or_default()
            .parse()
            .unwrap()
    }
}

impl From<&Sent> for Card {
    fn from(m: &Sent) -> Self {
        Card {
            id: m.id,
            text: m.text.clone(),
            actions: m.actions.clone(),
        }
    }
}

struct State {
    log: Log,
    /// Attachments users can send, by handle.
    files: std::collections::HashMap<String, Arc<Download>>,
    /// Every message id we handed out, user messages included.
    next_id: AtomicI64,
}

/// The in-memory platform. Cheap to clone through `Arc`.
pub struct TestChannel {
    caps: Capabilities,
    state: Mutex<State>,
    version: watch::Sender<u64>,
    sink: watch::Sender<Option<InboundSink>>,
}

/// Whether these buttons are an approval card's (other buttons, e.g. feedback
/// under answers, are not cards).
fn is_approval(actions: &[String]) -> bool {
    actions.first().is_some_and(|a| a.starts_with("ap:"))
}

fn flat_actions(message: &OutgoingMessage) -> Vec<String> {
    message
        .buttons
        .iter()
        .flatten()
        .map(|b| b.action.as_str().to_owned())
        .collect()
}

/// A test user: `user{id}`, not a bot, not an approver.
pub fn user(id: i64) -> User {
    User {
        is_approver: false,
        id: UserId(id),
        display_name: format!("user{id}"),
        is_bot: false,
    }
}

/// The DM address of `user` (the chat id equals the user id).
pub fn dm_chat(user: i64) -> ChatAddress {
    ChatAddress::new(Platform::Console, ChatId(user), None)
}

impl TestChannel {
    /// Capabilities: 4096 chars, edits and buttons, no edit interval.
    pub fn new() -> Arc<TestChannel> {
        Self::with_capabilities(Self::capabilities_of_new())
    }

    /// Like [`TestChannel::new`], as the operator at the machine (the
    /// console's `local_operator`): its users see the whole workspace.
    #[allow(dead_code)]
    pub fn local_operator() -> Arc<TestChannel> {
        Self::with_capabilities(Capabilities {
            local_operator: true,
            ..Self::capabilities_of_new()
        })
    }

    /// Like [`TestChannel::new`], declaring forms (as Discord does) but, like
    /// a platform whose deadline for one has passed, never able to open one
    /// (`Unsupported`): the Discord tests open real ones.
    #[allow(dead_code)]
    pub fn with_forms_too_late() -> Arc<TestChannel> {
        Self::with_capabilities(Capabilities {
            forms: true,
            ..Self::capabilities_of_new()
        })
    }

    fn capabilities_of_new() -> Capabilities {
        Capabilities {
            max_message_len: 4096,
            length_unit: LengthUnit::Chars,
            can_edit: true,
            buttons: true,
            threads: false,
            min_edit_interval: Duration::ZERO,
            private_answers: true,
            max_upload_bytes: 50 << 20,
            max_download_bytes: 20 << 20,
            answer_buttons: true,
            local_operator: false,
            forms: false,
            menus: false,
        }
    }

    pub fn with_capabilities(caps: Capabilities) -> Arc<TestChannel> {
        Arc::new(TestChannel {
            caps,
            state: Mutex::new(State {
                log: Log::default(),
                files: std::collections::HashMap::new(),
                next_id: AtomicI64::new(1),
            }),
            version: watch::Sender::new(0),
            sink: watch::Sender::new(None),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_id(&self) -> MessageId {
        MessageId(self.lock().next_id.fetch_add(1, Ordering::SeqCst))
    }

    fn mutate(&self, f: impl FnOnce(&mut Log)) {
        f(&mut self.lock().log);
        self.version.send_modify(|v| *v += 1);
    }

    /// A snapshot of everything so far.
    pub fn log(&self) -> Log {
        self.lock().log.clone()
    }

    /// Waits until `check` holds for the log and returns that snapshot; fails
    /// the test with the whole log after [`WAIT`].
    #[track_caller]
    pub fn wait_for<'a, F>(
        &'a self,
        what: &'a str,
        check: F,
    ) -> impl std::future::Future<Output = Log> + 'a
    where
        F: Fn(&Log) -> bool + 'a,
    {
        let caller = std::panic::Location::caller();
        async move {
            let mut rx = self.version.subscribe();
            let deadline = tokio::time::Instant::now() + WAIT;
            loop {
                rx.borrow_and_update();
                let log = self.log();
                if check(&log) {
                    return log;
                }
                if tokio::time::timeout_at(deadline, rx.changed())
                    .await
                    .is_err()
                {
                    panic!("{caller}: timed out waiting for {what}\n{log}");
                }
            }
        }
    }

    /// Waits for an approval card and returns it.
    pub async fn card(&self) -> Card {
        let log = self
            .wait_for("an approval card", |l| l.card().is_some())
            .await;
        log.card().unwrap_or_else(|| unreachable!())
    }

    /// Waits for a new card: one with a different message id than `previous`.
    pub async fn next_card(&self, previous: MessageId) -> Card {
        let log = self
            .wait_for("a new approval card", |l| {
                l.card().is_some_and(|c| c.id != previous)
            })
            .await;
        log.card().unwrap_or_else(|| unreachable!())
    }

    async fn deliver(&self, event: Inbound) {
        let mut rx = self.sink.subscribe();
        let sink = match tokio::time::timeout(WAIT, rx.wait_for(Option::is_some)).await {
            Ok(Ok(sink)) => sink.clone(),
            _ => panic!("the test channel is not running (was it passed to switchboard::start?)"),
        };
        let Some(sink) = sink else { unreachable!() };
        match sink.deliver(event).await {
            Ok(_) => {}
            Err(e) => panic!("the gateway did not take an inbound event: {e}"),
        }
    }

    /// Injects a message; returns its id.
    pub async fn message(
        &self,
        from: User,
        chat: ChatAddress,
        kind: ChatKind,
        addressed: Addressed,
        text: &str,
    ) -> MessageId {
        let id = self.next_id();
        self.deliver(Inbound::Message(InboundMessage {
            chat,
            chat_kind: kind,
            user: from,
            message_id: id,
            text: text.to_owned(),
            reply_to: None,
            addressed,
            attachments: Vec::new(),
            timestamp: chrono::Utc::now(),
            parent: None,
        }))
        .await;
        id
    }

    /// Registers a file users can attach; returns the attachment to send
    /// (its size is the bytes' size unless `download` says otherwise).
    pub fn file(&self, kind: AttachmentKind, name: Option<&str>, download: Download) -> Attachment {
        let handle = format!("file-{}", self.next_id().0);
        let size = match &download {
            Download::Bytes(b) | Download::Stall(b) | Download::Held(b, _) => b.len() as u64,
        };
        self.lock().files.insert(handle.clone(), Arc::new(download));
        let mut a = Attachment::new(kind, handle);
        a.name = name.map(str::to_owned);
        a.size = Some(size);
        a
    }

    /// A direct message from `user` with files (and `text` as caption).
    pub async fn dm_with(
        &self,
        user_id: i64,
        text: &str,
        attachments: Vec<Attachment>,
    ) -> MessageId {
        let id = self.next_id();
        self.deliver(Inbound::Message(InboundMessage {
            chat: dm_chat(user_id),
            chat_kind: ChatKind::Dm,
            user: user(user_id),
            message_id: id,
            text: text.to_owned(),
            reply_to: None,
            addressed: Addressed::Dm,
            attachments,
            timestamp: chrono::Utc::now(),
            parent: None,
        }))
        .await;
        id
    }

    /// `user` writes in group `chat` to the bot (mentioning it), with files.
    #[allow(dead_code)]
    pub async fn group_with(
        &self,
        user_id: i64,
        chat: i64,
        text: &str,
        attachments: Vec<Attachment>,
    ) -> MessageId {
        let id = self.next_id();
        self.deliver(Inbound::Message(InboundMessage {
            chat: ChatAddress::new(Platform::Console, ChatId(chat), None),
            chat_kind: ChatKind::Group,
            user: user(user_id),
            message_id: id,
            text: text.to_owned(),
            reply_to: None,
            addressed: Addressed::Mention,
            attachments,
            timestamp: chrono::Utc::now(),
            parent: None,
        }))
        .await;
        id
    }

    /// The files the bot sent, in order.
    pub fn files_sent(&self) -> Vec<Op> {
        self.log()
            .ops
            .into_iter()
            .filter(|op| matches!(op, Op::File { .. }))
            .collect()
    }

    /// A direct message from `user` (its DM chat id is the user id).
    pub async fn dm(&self, user_id: i64, text: &str) -> MessageId {
        self.message(
            user(user_id),
            dm_chat(user_id),
            ChatKind::Dm,
            Addressed::Dm,
            text,
        )
        .await
    }

    /// `user` writes in group `chat`, addressed to the bot as `addressed` says.
    pub async fn group(
        &self,
        user_id: i64,
        chat: i64,
        addressed: Addressed,
        text: &str,
    ) -> MessageId {
        let address = ChatAddress::new(Platform::Console, ChatId(chat), None);
        self.message(user(user_id), address, ChatKind::Group, addressed, text)
            .await
    }

    /// `user` presses the button with this action id (on the message carrying it).
    pub async fn press(&self, user_id: i64, action: &str) {
        let carrier = {
            let state = self.lock();
            state
                .log
                .messages
                .values()
                .rev()
                .find(|m| m.actions.iter().any(|a| a == action))
                .map(|m| (m.chat, m.id))
        };
        let (chat, id) = carrier.unwrap_or_else(|| (dm_chat(user_id), MessageId(0)));
        self.press_on(user_id, action, chat, id).await;
    }

    /// `user` presses a button carrying `action` on message `id` in `chat`,
    /// whichever message that is (`MessageId(0)`: the platform does not say) —
    /// what a modified client can send.
    pub async fn press_on(&self, user_id: i64, action: &str, chat: ChatAddress, id: MessageId) {
        let kind = if chat.chat == ChatId(user_id) {
            ChatKind::Dm
        } else {
            ChatKind::Group
        };
        let Some(action_id) = ActionId::parse(action) else {
            panic!("not an action id: {action:?}");
        };
        let handle = PressHandle(format!("press-{}", self.next_id()));
        self.deliver(Inbound::ButtonPress(ButtonPress {
            chat,
            chat_kind: kind,
            user: user(user_id),
            action: action_id,
            message: (id.0 != 0).then_some(MessageRef { chat, id }),
            handle,
            timestamp: chrono::Utc::now(),
            parent: None,
            input: Default::default(),
        }))
        .await;
    }
}

#[async_trait]
impl PlatformAdapter for TestChannel {
    fn platform(&self) -> Platform {
        Platform::Console
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(
        &self,
        sink: InboundSink,
        shutdown: CancellationToken,
    ) -> Result<(), PlatformError> {
        self.sink.send_replace(Some(sink));
        shutdown.cancelled().await;
        self.sink.send_replace(None);
        Ok(())
    }

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let len = switchboard_platform::measure(&message.text, self.caps.length_unit);
        if len > self.caps.max_message_len {
            return Err(PlatformError::TooLong {
                len,
                max: self.caps.max_message_len,
            });
        }
        let id = self.next_id();
        let actions = flat_actions(&message);
        self.mutate(|log| {
            log.ops.push(Op::Send {
                chat: *to,
                id,
                text: message.text.clone(),
                actions: actions.clone(),
                reply_to: message.reply_to,
            });
            log.messages.insert(
                id.0,
                Sent {
                    id,
                    chat: *to,
                    text: message.text.clone(),
                    actions,
                    edits: 0,
                },
            );
        });
        Ok(MessageRef { chat: *to, id })
    }

    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        let len = switchboard_platform::measure(&message.text, self.caps.length_unit);
        if len > self.caps.max_message_len {
            return Err(PlatformError::TooLong {
                len,
                max: self.caps.max_message_len,
            });
        }
        if !self.lock().log.messages.contains_key(&target.id.0) {
            return Err(PlatformError::NotFound);
        }
        let actions = flat_actions(&message);
        self.mutate(|log| {
            log.ops.push(Op::Edit {
                id: target.id,
                text: message.text.clone(),
                actions: actions.clone(),
            });
            if let Some(m) = log.messages.get_mut(&target.id.0) {
                m.text = message.text.clone();
                m.actions = actions;
                m.edits += 1;
            }
        });
        Ok(())
    }

    async fn answer_press(
        &self,
        press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError> {
        if matches!(answer, PressAnswer::Form(_)) {
            return Err(PlatformError::Unsupported("open a form now"));
        }
        self.mutate(|log| {
            if let (PressAnswer::Update(update), Some(target)) = (&answer, press.message) {
                if let Some(m) = log.messages.get_mut(&target.id.0) {
                    m.text = update.text.clone();
                    m.actions = flat_actions(update);
                    m.edits += 1;
                }
            }
            log.ops.push(Op::Answer {
                user: press.user.id,
                action: press.action.as_str().to_owned(),
                answer,
            });
        });
        Ok(())
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
        max_bytes: u64,
    ) -> Result<u64, PlatformError> {
        let max = max_bytes.min(self.caps.max_download_bytes);
        let file = self.lock().files.get(&attachment.handle.0).cloned();
        let Some(file) = file else {
            return Err(PlatformError::NotFound);
        };
        let stall = matches!(*file, Download::Stall(_));
        if let Download::Held(_, go) = &*file {
            go.notified().await;
        }
        let len = file.bytes().len();
        if len as u64 > max {
            return Err(PlatformError::TooLarge {
                size: len as u64,
                max,
            });
        }
        // Chunks cut as they are sent, as from a socket: the fake holds the
        // file once, whatever its size.
        let body =
            futures::stream::iter((0..len).step_by(64 * 1024).map(move |at| {
                Ok::<_, String>(file.bytes()[at..(at + 64 * 1024).min(len)].to_vec())
            }));
        if stall {
            let body = futures::StreamExt::chain(body, futures::stream::pending());
            stream_to(body, dest, max, TEST_STALL, PlatformError::Network).await
        } else {
            stream_to(body, dest, max, TEST_STALL, PlatformError::Network).await
        }
    }

    async fn send_file(&self, file: OutgoingFile) -> Result<MessageRef, PlatformError> {
        if file.bytes.len() > self.caps.max_upload_bytes {
            return Err(PlatformError::TooLong {
                len: file.bytes.len(),
                max: self.caps.max_upload_bytes,
            });
        }
        let id = self.next_id();
        self.mutate(|log| {
            log.ops.push(Op::File {
                chat: file.to,
                name: file.name.clone(),
                kind: file.kind,
                caption: file.caption.clone(),
                bytes: file.bytes.clone(),
            })
        });
        Ok(MessageRef { chat: file.to, id })
    }

    async fn activity(&self, chat: &ChatAddress, activity: Activity) -> Result<(), PlatformError> {
        self.mutate(|log| {
            log.ops.push(Op::Activity {
                chat: *chat,
                activity,
            })
        });
        Ok(())
    }
}
