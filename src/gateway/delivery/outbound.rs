//! Posting a turn's answer: a draft updated while the model streams, then
//! the final text chunked to the platform's limits. The draft is a message
//! edited in place — it becomes the first chunk, so the answer is never
//! posted twice — or, where the platform has them (Telegram private chats),
//! a native draft: an ephemeral preview the final answer, sent as new
//! messages, replaces (shown by a task of its own, see `native_draft`); a
//! chat that refuses it streams by edits for the rest of the answer. The draft first appears
//! once the answer has streamed for one edit interval: an answer complete by
//! then is one message instead of a message and an edit — half the platform
//! quota, which in a Telegram group (20 messages a minute) is what limits
//! throughput. The typing indicator covers the wait.

use crate::gateway::delivery::answer_file;
use crate::gateway::delivery::native_draft::NativeDraft;
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{
    chunk_markdown, measure, Activity, Button, Capabilities, ChatAddress, DraftId, Menu, MessageId,
    MessageRef, OutgoingMessage, PlatformAdapter, PlatformError,
};
use tokio::time::Instant;

/// What a draft that only showed a status says once its turn moved on.
const CONTINUED: &str = "⏸ Paused here — the answer follows in a new message.";

/// When an answer's parts happened, for pacing its edits and its latency.
#[derive(Default)]
struct Times {
    /// The draft's last update (an edit, or text handed to a native draft).
    last_edit: Option<Instant>,
    /// When the first text arrived.
    started: Option<Instant>,
    /// When the chat first received something of the answer.
    first_byte: Option<std::time::Instant>,
}

/// Where the answer shows while it streams.
enum Preview {
    /// A message edited in place, once sent; it becomes the first chunk.
    Message(Option<MessageRef>),
    /// The platform's native draft, shown by a task of its own.
    Native(NativeDraft),
}

impl Preview {
    /// A native draft when the platform has them in `chat`, else a message.
    fn for_chat(adapter: &dyn PlatformAdapter, chat: &ChatAddress) -> Preview {
        let id = DraftId::new(rand::random_range(1..=i32::MAX.unsigned_abs()));
        match (adapter.drafts(chat), id) {
            (Some(drafts), Some(id)) => Preview::Native(NativeDraft::new(id, drafts)),
            _ => Preview::Message(None),
        }
    }
}

/// Streams one answer into a chat.
pub(crate) struct ReplyStream {
    adapter: Arc<dyn PlatformAdapter>,
    caps: Capabilities,
    chat: ChatAddress,
    reply_to: Option<MessageId>,
    preview: Preview,
    shown: String,
    text: String,
    /// What a running tool reports (a sub-agent's steps), shown under the
    /// text until more text arrives.
    status: Option<String>,
    /// The turn's activity lines, shown above the text (empty: none).
    head: String,
    /// When the answer's text arrived and reached the chat.
    times: Times,
    /// Buttons for the last chunk of the final answer (feedback).
    final_buttons: Vec<Vec<Button>>,
}

impl ReplyStream {
    pub(crate) fn new(
        adapter: Arc<dyn PlatformAdapter>,
        chat: ChatAddress,
        reply_to: Option<MessageId>,
    ) -> ReplyStream {
        let caps = adapter.capabilities().clone();
        let preview = Preview::for_chat(adapter.as_ref(), &chat);
        ReplyStream {
            adapter,
            caps,
            chat,
            reply_to,
            preview,
            shown: String::new(),
            text: String::new(),
            status: None,
            head: String::new(),
            times: Times::default(),
            final_buttons: Vec::new(),
        }
    }

    /// When the chat first received something of the answer (a draft), if
    /// it did yet.
    pub(crate) fn first_byte(&self) -> Option<std::time::Instant> {
        match &self.preview {
            Preview::Native(native) => native.first_shown(),
            Preview::Message(_) => None,
        }
        .or(self.times.first_byte)
    }

    /// Whether a message of the answer is in the chat for good (a draft
    /// edited in place): a crash from then on must not run the turn again.
    /// A native draft is not: it vanishes with the process.
    pub(crate) fn posted(&self) -> bool {
        matches!(self.preview, Preview::Message(Some(_)))
    }

    /// Adds streamed text; updates the draft when the platform's edit interval allows.
    pub(crate) async fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        self.status = None;
        self.refresh().await;
    }

    /// Shows what a running tool reports under the text so far.
    pub(crate) async fn set_status(&mut self, status: String) {
        self.status = Some(status);
        self.refresh().await;
    }

    /// Shows the turn's activity lines above the text so far. Like text,
    /// only within the edit interval: a change in between is not sent on
    /// its own, the next update (or the final answer) carries it.
    pub(crate) async fn set_head(&mut self, head: String) {
        self.head = head;
        self.refresh().await;
    }

    /// The draft's text: the activity lines, the answer so far and the status line.
    fn display(&self) -> String {
        let body = match &self.status {
            Some(status) if self.text.trim().is_empty() => format!("⏳ {status}"),
            Some(status) => format!("{}\n\n⏳ {status}", self.text.trim_end()),
            None => self.text.clone(),
        };
        crate::gateway::delivery::activity::above(&self.head, &body)
    }

    /// Whether `text` fits one message (and so one draft).
    fn fits(&self, text: &str) -> bool {
        measure(text, self.caps.length_unit) <= self.caps.max_message_len
    }

    /// The least time between two updates of the draft.
    fn interval(&self) -> Duration {
        match &self.preview {
            Preview::Native(native) => native.interval(),
            Preview::Message(_) => self.caps.min_edit_interval,
        }
    }

    async fn refresh(&mut self) {
        if !self.caps.can_edit && matches!(self.preview, Preview::Message(_)) {
            return;
        }
        let started = *self.times.started.get_or_insert_with(Instant::now);
        let due = self.times.last_edit.unwrap_or(started).elapsed() >= self.interval();
        // Streaming stops at the first chunk's limit; the rest is posted at the
        // end. Past 4 bytes a unit the text cannot fit: skip the copy and the
        // measuring, which for a long answer would cost time quadratic in its size.
        if !due || self.text.len() > self.caps.max_message_len.saturating_mul(4) {
            return;
        }
        let text = self.display();
        if self.fits(&text) && !text.trim().is_empty() {
            self.update_draft(text).await;
        }
    }

    async fn update_draft(&mut self, text: String) {
        if text == self.shown {
            return;
        }
        if let Preview::Native(native) = &mut self.preview {
            if !native.refused() {
                native.show(&self.adapter, self.chat, text.clone());
                self.times.last_edit = Some(Instant::now());
                self.shown = text;
                return;
            }
            // Refused: this answer streams by edits from here on.
            self.times.first_byte = self.times.first_byte.or(native.first_shown());
            self.preview = Preview::Message(None);
            self.shown.clear();
        }
        let result = match self.message() {
            Some(draft) => {
                self.adapter
                    .edit(&draft, OutgoingMessage::text(text.clone()))
                    .await
            }
            None => self
                .adapter
                .send(
                    &self.chat,
                    OutgoingMessage::text(text.clone()).replying_to(self.reply_to),
                )
                .await
                .map(|r| self.preview = Preview::Message(Some(r))),
        };
        self.times.last_edit = Some(Instant::now());
        match result {
            Ok(()) => {
                self.times
                    .first_byte
                    .get_or_insert_with(std::time::Instant::now);
                self.shown = text;
            }
            Err(e) => {
                tracing::debug!(error = %e, "draft update failed; the final answer will still be posted")
            }
        }
    }

    /// The message the draft is edited in, if it is one and was sent.
    fn message(&self) -> Option<MessageRef> {
        match &self.preview {
            Preview::Message(draft) => *draft,
            Preview::Native(_) => None,
        }
    }

    /// Takes the message the draft is edited in, if any (the native draft
    /// has none: it vanishes when the answer is sent).
    fn take_message(&mut self) -> Option<MessageRef> {
        match &mut self.preview {
            Preview::Message(draft) => draft.take(),
            Preview::Native(_) => None,
        }
    }

    /// Stops a native draft's updates: the final answer (or a paused
    /// turn's text) must come after the last of them.
    async fn stop_native(&mut self) {
        if let Preview::Native(native) = &mut self.preview {
            native.stop().await;
        }
    }

    /// Settles what the chat shows when the turn pauses (it answers in a new
    /// message once resumed, in this process or another): the text said so
    /// far is posted in full, and a "⏳" status line under it — which would
    /// read as work still going on — is dropped.
    pub(crate) async fn settle(mut self) {
        self.stop_native().await;
        self.final_buttons.clear();
        let said = self.text.trim_end().to_owned();
        let result = if !said.trim().is_empty() {
            self.finish(&said).await.map(drop)
        } else if let Some(draft) = self.take_message() {
            self.pace().await;
            self.adapter
                .edit(&draft, OutgoingMessage::text(CONTINUED.to_owned()))
                .await
        } else {
            Ok(())
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "could not settle the draft of a paused turn");
        }
    }

    /// Puts `rows` of buttons under the last chunk of the final answer.
    pub(crate) fn set_final_buttons(&mut self, rows: Vec<Vec<Button>>) {
        self.final_buttons = rows;
    }

    /// Posts the final answer: a draft message is edited to the first chunk,
    /// the rest are sent in order (after a native draft, every chunk is
    /// sent). Returns the message refs of the answer.
    pub(crate) async fn finish(self, final_text: &str) -> Result<Vec<MessageRef>, PlatformError> {
        let text = if final_text.trim().is_empty() {
            "(no answer)"
        } else {
            final_text
        };
        if answer_file::too_long(text) {
            return self.finish_as_file(text).await;
        }
        self.post(text).await
    }

    /// Posts `text` chunked: a draft message becomes the first chunk.
    async fn post(mut self, text: &str) -> Result<Vec<MessageRef>, PlatformError> {
        self.stop_native().await;
        let chunks = chunk_markdown(text, self.caps.max_message_len, self.caps.length_unit);
        let last = chunks.len().saturating_sub(1);
        let mut refs = Vec::with_capacity(chunks.len());
        for (i, chunk) in chunks.into_iter().enumerate() {
            let buttons = if i == last {
                std::mem::take(&mut self.final_buttons)
            } else {
                Vec::new()
            };
            match (i, self.take_message()) {
                (0, Some(draft)) => {
                    if chunk != self.shown || !buttons.is_empty() {
                        self.pace().await;
                        self.adapter
                            .edit(&draft, OutgoingMessage::text(chunk).with_buttons(buttons))
                            .await?;
                    }
                    refs.push(draft);
                }
                (i, _) => {
                    let reply_to = if i == 0 { self.reply_to } else { None };
                    let message = OutgoingMessage::text(chunk)
                        .replying_to(reply_to)
                        .with_buttons(buttons);
                    refs.push(self.adapter.send(&self.chat, message).await?);
                }
            }
        }
        Ok(refs)
    }

    /// An over-long answer: its head in the chat (the draft edited to it, or a
    /// new message), with the buttons, then the whole answer as a file.
    async fn finish_as_file(self, text: &str) -> Result<Vec<MessageRef>, PlatformError> {
        let (adapter, chat) = (self.adapter.clone(), self.chat);
        let mut refs = self.post(&answer_file::head(text)).await?;
        match adapter.send_file(answer_file::file(chat, text)).await {
            Ok(r) => refs.push(r),
            Err(e) => {
                tracing::warn!(error = %e, chars = text.chars().count(), "could not attach a long answer");
                let notice = format!("_(The full answer could not be attached: {e}.)_");
                refs.push(adapter.send(&chat, OutgoingMessage::text(notice)).await?);
            }
        }
        Ok(refs)
    }

    /// Keeps the final edit within the platform's edit interval.
    async fn pace(&self) {
        if let Some(t) = self.times.last_edit {
            let wait = self.caps.min_edit_interval.saturating_sub(t.elapsed());
            if wait > Duration::ZERO {
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// Sends a complete text (command replies, notices) chunked to the platform's limits.
pub(crate) async fn send_text(
    adapter: &dyn PlatformAdapter,
    chat: &ChatAddress,
    text: &str,
    reply_to: Option<MessageId>,
) -> Result<(), PlatformError> {
    send_text_with(adapter, chat, text, reply_to, None).await
}

/// [`send_text`] with `menu` under its last chunk.
async fn send_text_with(
    adapter: &dyn PlatformAdapter,
    chat: &ChatAddress,
    text: &str,
    reply_to: Option<MessageId>,
    mut menu: Option<Menu>,
) -> Result<(), PlatformError> {
    let caps = adapter.capabilities();
    let chunks = chunk_markdown(text, caps.max_message_len, caps.length_unit);
    let last = chunks.len().saturating_sub(1);
    for (i, chunk) in chunks.into_iter().enumerate() {
        let reply_to = if i == 0 { reply_to } else { None };
        let menu = if i == last { menu.take() } else { None };
        let message = OutgoingMessage::text(chunk)
            .replying_to(reply_to)
            .with_menu(menu);
        adapter.send(chat, message).await?;
    }
    Ok(())
}

/// Sends a complete text and marks the chat idle.
pub(crate) async fn notify(
    adapter: &dyn PlatformAdapter,
    chat: &ChatAddress,
    text: &str,
    reply_to: Option<MessageId>,
) {
    notify_with(adapter, chat, text, reply_to, None).await
}

/// [`notify`] with `menu` (the choices of `/model`, `/queue`) under the reply.
pub(crate) async fn notify_with(
    adapter: &dyn PlatformAdapter,
    chat: &ChatAddress,
    text: &str,
    reply_to: Option<MessageId>,
    menu: Option<Menu>,
) {
    if let Err(e) = send_text_with(adapter, chat, text, reply_to, menu).await {
        tracing::warn!(error = %e, "could not send a reply");
    }
    let _ = adapter.activity(chat, Activity::Answered).await;
}

#[cfg(test)]
#[path = "native_draft_tests.rs"]
mod native_draft_tests;
