//! A platform adapter wrapper that scrubs known secrets from everything posted.

use async_trait::async_trait;
use std::sync::Arc;
use switchboard_platform::{
    measure, Activity, Attachment, ButtonPress, Capabilities, ChatAddress, CommandInfo, DraftId,
    Drafts, Form, GaveWay, InboundSink, MessageRef, OutgoingFile, OutgoingMessage, Platform,
    PlatformAdapter, PlatformError, PressAnswer,
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Delegates every operation to the inner adapter, with the known secrets
/// (see [`crate::secrets`]) replaced in the text of each message, edit,
/// draft, card, press answer and command description. Inbound events pass
/// unchanged.
pub struct ScrubbedAdapter {
    inner: Arc<dyn PlatformAdapter>,
}

impl ScrubbedAdapter {
    pub fn wrap(inner: Arc<dyn PlatformAdapter>) -> Arc<dyn PlatformAdapter> {
        Arc::new(ScrubbedAdapter { inner })
    }
}

/// `text` cut to `max` units of the platform, the last one `…` when cut.
fn fit(mut text: String, caps: &Capabilities) -> String {
    if measure(&text, caps.length_unit) <= caps.max_message_len {
        return text;
    }
    while measure(&text, caps.length_unit) >= caps.max_message_len {
        if text.pop().is_none() {
            break;
        }
    }
    text.push('…');
    text
}

impl ScrubbedAdapter {
    /// `message` with its text and button labels scrubbed. `[REDACTED]` can be
    /// longer than the secret it replaces (secrets have at least 8 characters),
    /// so a message planned to the limit is cut back to it.
    fn scrubbed(&self, mut message: OutgoingMessage) -> OutgoingMessage {
        let text = std::mem::take(&mut message.text);
        message.text = match crate::secrets::scrub(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(clean) => fit(clean, self.inner.capabilities()),
        };
        for button in message.buttons.iter_mut().flatten() {
            button.label = crate::secrets::scrub_string(std::mem::take(&mut button.label));
        }
        for option in message.menu.iter_mut().flat_map(|m| m.options.iter_mut()) {
            option.label = crate::secrets::scrub_string(std::mem::take(&mut option.label));
            option.description = option.description.take().map(crate::secrets::scrub_string);
        }
        message
    }
}

/// `form` with its title, labels and prefilled values scrubbed (a value
/// kept within the form's limit).
fn scrubbed_form(mut form: Form) -> Form {
    form.title = crate::secrets::scrub_string(form.title);
    for field in &mut form.fields {
        field.label = crate::secrets::scrub_string(std::mem::take(&mut field.label));
        let value = crate::secrets::scrub_string(std::mem::take(&mut field.value));
        field.value = value.chars().take(Form::MAX_VALUE_CHARS).collect();
    }
    form
}

impl ScrubbedAdapter {
    /// `call` to the platform in a span of its own (see `crate::telemetry`).
    async fn traced<T>(
        &self,
        op: &'static str,
        call: impl std::future::Future<Output = Result<T, PlatformError>>,
    ) -> Result<T, PlatformError> {
        let span = crate::telemetry::platform_span(self.inner.platform(), op);
        let out = call.instrument(span.clone()).await;
        if out.is_err() {
            crate::telemetry::platform_failed(&span);
        }
        out
    }
}

/// `file` with its caption scrubbed and, when it is text (an `answer.md`, a
/// `command.txt`), its content too; binary content passes unchanged.
fn scrubbed_file(mut file: OutgoingFile) -> OutgoingFile {
    file.caption = file.caption.map(crate::secrets::scrub_string);
    if let Ok(text) = std::str::from_utf8(&file.bytes) {
        if let std::borrow::Cow::Owned(clean) = crate::secrets::scrub(text) {
            file.bytes = clean.into_bytes();
        }
    }
    file
}

#[async_trait]
impl PlatformAdapter for ScrubbedAdapter {
    fn platform(&self) -> Platform {
        self.inner.platform()
    }

    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }

    fn may_redeliver(&self) -> bool {
        self.inner.may_redeliver()
    }

    fn unreadable_inbound(&self) -> u64 {
        self.inner.unreadable_inbound()
    }

    fn link(&self) -> switchboard_platform::LinkStatus {
        self.inner.link()
    }

    fn pacer_waits(&self) -> Option<switchboard_platform::WaitSnapshot> {
        self.inner.pacer_waits()
    }

    fn upload_limit(&self, chat: ChatAddress) -> usize {
        self.inner.upload_limit(chat)
    }

    fn download_limit(&self, chat: ChatAddress) -> u64 {
        self.inner.download_limit(chat)
    }

    fn status_reactions(&self) -> bool {
        self.inner.status_reactions()
    }

    async fn set_status(
        &self,
        target: &switchboard_platform::MessageRef,
        status: switchboard_platform::Status,
        previous: Option<switchboard_platform::Status>,
    ) -> Result<bool, PlatformError> {
        self.inner.set_status(target, status, previous).await
    }

    async fn wait_turn(&self, chat: &ChatAddress, call: GaveWay, within: std::time::Duration) {
        self.inner.wait_turn(chat, call, within).await;
    }

    async fn run(
        &self,
        sink: InboundSink,
        shutdown: CancellationToken,
    ) -> Result<(), PlatformError> {
        self.inner.run(sink, shutdown).await
    }

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let message = self.scrubbed(message);
        self.traced("send", self.inner.send(to, message)).await
    }

    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        let message = self.scrubbed(message);
        self.traced("edit", self.inner.edit(target, message)).await
    }

    fn drafts(&self, chat: &ChatAddress) -> Option<Drafts> {
        self.inner.drafts(chat)
    }

    async fn draft(
        &self,
        to: &ChatAddress,
        id: DraftId,
        text: &str,
    ) -> Result<bool, PlatformError> {
        let clean = match crate::secrets::scrub(text) {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(clean) => Some(fit(clean, self.inner.capabilities())),
        };
        let text = clean.as_deref().unwrap_or(text);
        self.traced("draft", self.inner.draft(to, id, text)).await
    }

    async fn answer_press(
        &self,
        press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError> {
        let answer = match answer {
            PressAnswer::Ack => PressAnswer::Ack,
            PressAnswer::Update(message) => PressAnswer::Update(self.scrubbed(message)),
            PressAnswer::Private(text) => PressAnswer::Private(crate::secrets::scrub_string(text)),
            PressAnswer::Form(form) => PressAnswer::Form(scrubbed_form(form)),
        };
        self.traced("answer_press", self.inner.answer_press(press, answer))
            .await
    }

    async fn defer_press(&self, press: &ButtonPress) -> Result<(), PlatformError> {
        self.traced("defer_press", self.inner.defer_press(press))
            .await
    }

    async fn send_file(&self, file: OutgoingFile) -> Result<MessageRef, PlatformError> {
        self.traced("send_file", self.inner.send_file(scrubbed_file(file)))
            .await
    }

    /// A voice note carries no text of its own to scrub.
    async fn send_voice(
        &self,
        voice: switchboard_platform::OutgoingVoice,
    ) -> Result<MessageRef, PlatformError> {
        self.traced("send_voice", self.inner.send_voice(voice))
            .await
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
        max_bytes: u64,
    ) -> Result<u64, PlatformError> {
        self.inner.download(attachment, dest, max_bytes).await
    }

    async fn activity(&self, chat: &ChatAddress, activity: Activity) -> Result<(), PlatformError> {
        self.inner.activity(chat, activity).await
    }

    async fn set_commands(&self, commands: &[CommandInfo]) -> Result<(), PlatformError> {
        let commands: Vec<CommandInfo> = commands
            .iter()
            .map(|c| CommandInfo {
                name: c.name.clone(),
                description: crate::secrets::scrub(&c.description).into_owned(),
            })
            .collect();
        self.inner.set_commands(&commands).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use switchboard_platform::LengthUnit;

    #[test]
    fn a_scrubbed_message_longer_than_the_limit_is_cut_back_to_it() {
        let caps = Capabilities {
            max_message_len: 12,
            length_unit: LengthUnit::Utf16,
            can_edit: true,
            buttons: true,
            threads: false,
            min_edit_interval: Duration::ZERO,
            private_answers: false,
            max_upload_bytes: 0,
            max_download_bytes: 0,
            answer_buttons: true,
            local_operator: false,
            forms: false,
            menus: false,
        };
        assert_eq!(fit("short".into(), &caps), "short");
        let cut = fit("a [REDACTED] b c".into(), &caps);
        assert_eq!(cut, "a [REDACTED…");
        assert_eq!(measure(&cut, LengthUnit::Utf16), 12);
    }

    #[test]
    fn a_text_file_and_its_caption_are_scrubbed_and_binary_passes() {
        let secret = "sk-file-test-5b1d9e0c7a";
        crate::secrets::register([secret]);
        let to = ChatAddress::new(Platform::Console, switchboard_platform::ChatId(1), None);
        let file = OutgoingFile::document(to, "answer.md", format!("key: {secret}").into_bytes())
            .with_caption(format!("caption {secret}"));
        let clean = scrubbed_file(file);
        assert_eq!(clean.bytes, b"key: [REDACTED]");
        assert_eq!(clean.caption.as_deref(), Some("caption [REDACTED]"));
        let mut binary = secret.as_bytes().to_vec();
        binary.push(0xff);
        let file = OutgoingFile::document(to, "x.bin", binary.clone());
        assert_eq!(scrubbed_file(file).bytes, binary);
    }
}
