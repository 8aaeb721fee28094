//! The adapter trait, its declared capabilities and its error type.

use crate::file::OutgoingFile;
use crate::ids::{ChatAddress, DraftId, MessageRef, Platform};
use crate::inbound::ButtonPress;
use crate::intake::InboundSink;
use crate::media::Attachment;
use crate::outbound::{Activity, OutgoingMessage, PressAnswer};
use crate::status::Status;
use crate::voice::OutgoingVoice;
use async_trait::async_trait;
use std::time::Duration;
use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;

/// The unit a platform measures message length in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthUnit {
    /// Unicode scalar values (Discord).
    Chars,
    /// UTF-16 code units (Telegram).
    Utf16,
}

/// What a platform can do, so the core plans chunking and streaming without
/// knowing which platform it talks to.
#[derive(Debug, Clone)]
pub struct Capabilities {
    pub max_message_len: usize,
    pub length_unit: LengthUnit,
    pub can_edit: bool,
    pub buttons: bool,
    pub threads: bool,
    /// Minimum time between two edits of a message in one chat while streaming.
    pub min_edit_interval: Duration,
    /// Whether a press can be answered privately (ephemeral / callback toast).
    pub private_answers: bool,
    /// The largest file [`PlatformAdapter::send_file`] accepts, in bytes.
    pub max_upload_bytes: usize,
    /// The largest attachment [`PlatformAdapter::download`] can fetch, in
    /// bytes (Telegram bots: 20 MB); 0 when the adapter cannot download.
    pub max_download_bytes: u64,
    /// Buttons can sit under an answer (feedback), not only on approval cards.
    pub answer_buttons: bool,
    /// The person typing is the operator at this machine (the console): no
    /// access policy, no inbound or press limits, the operator's help, a
    /// failed model call shown with its cause, and — the screen keeping no
    /// history — approval cards still pending at start shown again.
    pub local_operator: bool,
    /// A press of a button can be answered with a form
    /// ([`crate::PressAnswer::Form`], a Discord modal).
    pub forms: bool,
    /// Messages can carry a menu of options ([`crate::Menu`], a Discord
    /// select menu).
    pub menus: bool,
}

/// A lowest-priority call that gave way ([`PlatformAdapter::wait_turn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveWay {
    /// A status reaction ([`PlatformAdapter::set_status`]).
    Status,
    /// A streamed draft ([`PlatformAdapter::draft`]).
    Draft,
}

/// How answers stream in a chat whose platform has native drafts
/// ([`PlatformAdapter::drafts`]): an ephemeral preview, updated in place and
/// replaced by the final answer, which goes out as new messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drafts {
    /// Minimum time between two updates of one chat's draft.
    pub min_interval: Duration,
    /// How long the platform shows a draft after its last update. While
    /// nothing new comes (a long tool call) the core shows it again before
    /// then.
    pub lifetime: Duration,
}

/// A slash command the gateway answers, for the platform's command menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// Without the slash, e.g. `help`.
    pub name: String,
    /// One line saying what it does.
    pub description: String,
}

impl CommandInfo {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> CommandInfo {
        CommandInfo {
            name: name.into(),
            description: description.into(),
        }
    }

    /// The entries of a platform's menu: the commands whose names `valid`
    /// accepts (the first of duplicates), at most `max`, each described by
    /// its first line clipped to `max_description` characters (an empty one
    /// becomes the name).
    pub fn menu(
        commands: &[CommandInfo],
        max: usize,
        max_description: usize,
        valid: impl Fn(&str) -> bool,
    ) -> Vec<CommandInfo> {
        let mut seen = std::collections::HashSet::new();
        commands
            .iter()
            .filter(|c| valid(&c.name) && seen.insert(c.name.as_str()))
            .take(max)
            .map(|c| {
                let line = c.description.lines().next().unwrap_or_default().trim();
                let line = if line.is_empty() {
                    c.name.as_str()
                } else {
                    line
                };
                CommandInfo {
                    name: c.name.clone(),
                    description: clip(line, max_description),
                }
            })
            .collect()
    }
}

/// `text` in at most `max` characters, the last one `…` when cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

/// Why an outbound operation failed after the adapter's own retries.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("message too long for the platform ({len} > {max})")]
    TooLong { len: usize, max: usize },
    #[error("the platform refused the request: {0}")]
    Rejected(String),
    #[error("message or chat not found")]
    NotFound,
    #[error("network error talking to the platform: {0}")]
    Network(String),
    #[error("the adapter is shutting down")]
    Closed,
    #[error("the platform cannot {0}")]
    Unsupported(&'static str),
    #[error("the file is too large ({size} bytes; the limit is {max})")]
    TooLarge { size: u64, max: u64 },
    #[error("the download stalled")]
    Stalled,
    #[error("could not write the file: {0}")]
    Storage(#[source] std::io::Error),
    /// A local resource the adapter needs failed: its spool, its listener,
    /// its input.
    #[error("{what}: {source}")]
    Local {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// A chat platform as the core sees it.
///
/// Implementations apply their own rate limiting and 429 handling: when a call
/// returns `Ok`, the platform accepted the operation exactly once.
#[async_trait]
pub trait PlatformAdapter: Send + Sync + 'static {
    fn platform(&self) -> Platform;

    /// Whether the platform may deliver one message more than once (a
    /// webhook retried after a slow answer): the core then drops repeats.
    fn may_redeliver(&self) -> bool {
        false
    }

    fn capabilities(&self) -> &Capabilities;

    /// Inbound updates or events received since start that could not be read
    /// and were skipped (each logged), for the operator's metrics.
    fn unreadable_inbound(&self) -> u64 {
        0
    }

    /// How long outbound calls waited in the adapter's flood control before
    /// going out, for the operator's metrics; `None` without one.
    fn pacer_waits(&self) -> Option<crate::WaitSnapshot> {
        None
    }

    /// The connection to the platform, for the operator's web console. An
    /// adapter without a remote connection is always connected.
    fn link(&self) -> crate::LinkStatus {
        crate::LinkStatus::local()
    }

    /// Receives platform events and hands them to `sink` until `shutdown`,
    /// forgetting each on the platform's side (confirming it, dropping it
    /// from a spool, moving a mark past it) only once its receipt has come:
    /// an event without one is offered again, at the latest by the next
    /// process.
    async fn run(
        &self,
        sink: InboundSink,
        shutdown: CancellationToken,
    ) -> Result<(), PlatformError>;

    /// Sends a message; `message.text` fits `capabilities().max_message_len`.
    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError>;

    /// Replaces a message's text and buttons. "Not modified" counts as success.
    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError>;

    /// Whether an answer in `chat` streams as a native draft
    /// ([`Self::draft`]) instead of a message edited in place, and at what
    /// pace. The default, `None`, is edit in place. The answer can change
    /// while the process runs: a chat where the platform refused a draft is
    /// `None` from then on.
    fn drafts(&self, chat: &ChatAddress) -> Option<Drafts> {
        let _ = chat;
        None
    }

    /// Shows `text` (within `capabilities().max_message_len`, rendered as
    /// [`Self::edit`] renders it) as draft `id` in `to`, replacing what the
    /// draft showed. A draft is ephemeral: the final answer is sent with
    /// [`Self::send`]. Drafts have a budget of their own in the chat and
    /// give way to messages: `Ok(false)` when it was not sent (the caller
    /// tries again later with its latest text). `Err(Unsupported)` when the
    /// platform refused drafts in this chat ([`Self::drafts`] is `None` for
    /// it from then on); the default refuses.
    async fn draft(
        &self,
        to: &ChatAddress,
        id: DraftId,
        text: &str,
    ) -> Result<bool, PlatformError> {
        let _ = (to, id, text);
        Err(PlatformError::Unsupported("stream drafts"))
    }

    /// Answers a button press; every press must be answered exactly once.
    async fn answer_press(
        &self,
        press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError>;

    /// Tells the platform at once that `press` is being worked on, where it
    /// wants an answer within a deadline (Discord: 3 s), so that an answer
    /// given later with [`Self::answer_press`] (still required, once) still
    /// reaches the presser. Platforms without such a deadline keep this
    /// default, which does nothing. A [`PressAnswer::Form`] cannot follow.
    async fn defer_press(&self, press: &ButtonPress) -> Result<(), PlatformError> {
        let _ = press;
        Ok(())
    }

    /// The largest file [`Self::send_file`] can deliver to `chat`: at least
    /// `capabilities().max_upload_bytes`, more where the platform allows it
    /// there (a boosted Discord server). The default is the capability.
    fn upload_limit(&self, chat: ChatAddress) -> usize {
        let _ = chat;
        self.capabilities().max_upload_bytes
    }

    /// The largest attachment [`Self::download`] fetches from `chat`: at least
    /// `capabilities().max_download_bytes`, more where people may send more
    /// there (a boosted Discord server). The default is the capability.
    fn download_limit(&self, chat: ChatAddress) -> u64 {
        let _ = chat;
        self.capabilities().max_download_bytes
    }

    /// Sends a file (at most [`Self::upload_limit`] of its chat) with its
    /// caption. The default refuses: adapters that can upload override it.
    async fn send_file(&self, file: OutgoingFile) -> Result<MessageRef, PlatformError> {
        let _ = file;
        Err(PlatformError::Unsupported("send files"))
    }

    /// Sends a voice note (an Ogg Opus file, at most [`Self::upload_limit`]
    /// of its chat) without text: the answer it speaks is sent as text too.
    /// The default refuses: adapters that can play voice notes override it.
    async fn send_voice(&self, voice: OutgoingVoice) -> Result<MessageRef, PlatformError> {
        let _ = voice;
        Err(PlatformError::Unsupported("send voice notes"))
    }

    /// Streams `attachment` (one this adapter normalized) into `dest`,
    /// refusing more than `max_bytes` (and at most the [`Self::download_limit`]
    /// of its chat) and giving up on a stalled
    /// transfer ([`crate::stream_to`] does both). Returns the bytes written.
    /// The default refuses: adapters that receive files override it.
    async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn AsyncWrite + Unpin + Send),
        max_bytes: u64,
    ) -> Result<u64, PlatformError> {
        let _ = (attachment, dest, max_bytes);
        Err(PlatformError::Unsupported("download files"))
    }

    /// Shows what the bot is doing. Best effort.
    async fn activity(&self, chat: &ChatAddress, activity: Activity) -> Result<(), PlatformError>;

    /// Whether this adapter shows [`Status`] reactions on users' messages
    /// (`REACTIONS`); the default is no.
    fn status_reactions(&self) -> bool {
        false
    }

    /// Shows `status` as the bot's reaction on `target`, replacing the
    /// reaction of `previous` (the status shown before, if any). It goes at
    /// the lowest priority, like typing: `Ok(false)` when it gave way to
    /// other calls and was not sent (the caller tries again later). The
    /// default refuses: adapters with reactions override it.
    async fn set_status(
        &self,
        target: &MessageRef,
        status: Status,
        previous: Option<Status>,
    ) -> Result<bool, PlatformError> {
        let _ = (target, status, previous);
        Err(PlatformError::Unsupported("react to messages"))
    }

    /// After a lowest-priority `call` ([`Self::set_status`] or
    /// [`Self::draft`]) gave way in `chat`: waits until what it gave way to
    /// is over (at most `within`) — the chat's call in flight, a pause —
    /// so it is asked again at the next moment it can go instead of on a
    /// timer. The default waits `within`.
    async fn wait_turn(&self, chat: &ChatAddress, call: GaveWay, within: std::time::Duration) {
        let _ = (chat, call);
        tokio::time::sleep(within).await;
    }

    /// Publishes the commands users can type in the platform's command menu,
    /// replacing the previous set. Commands the platform cannot name are left
    /// out of the menu (they still work when typed). Platforms without such a
    /// menu keep this default, which does nothing.
    async fn set_commands(&self, commands: &[CommandInfo]) -> Result<(), PlatformError> {
        let _ = commands;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::CommandInfo;

    fn menu(commands: &[CommandInfo]) -> Vec<CommandInfo> {
        CommandInfo::menu(commands, 3, 10, |name| !name.contains(' '))
    }

    #[test]
    fn a_menu_keeps_valid_first_names_and_one_clipped_line() {
        let menu = menu(&[
            CommandInfo::new("help", "first line\nsecond line"),
            CommandInfo::new("two words", "refused by the platform"),
            CommandInfo::new("help", "a duplicate"),
            CommandInfo::new("blank", "  "),
            CommandInfo::new("long", "é".repeat(30)),
            CommandInfo::new("fourth", "over the cap"),
        ]);
        let got: Vec<(&str, &str)> = menu
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("help", "first line"),
                ("blank", "blank"),
                ("long", "ééééééééé…"),
            ]
        );
    }
}
