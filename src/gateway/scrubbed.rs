//! A platform adapter wrapper that scrubs known secrets from everything posted.

use async_trait::async_trait;
use std::sync::Arc;
use switchboard_platform::{
    Activity, ButtonPress, Capabilities, ChatAddress, CommandInfo, InboundSink, MessageRef,
    OutgoingMessage, Platform, PlatformAdapter, PlatformError, PressAnswer,
};
use tokio_util::sync::CancellationToken;

/// Delegates every operation to the inner adapter, with the known secrets
/// (see [`crate::secrets`]) replaced in the text of each message, edit, card,
/// press answer and command description. Inbound events pass unchanged.
pub struct ScrubbedAdapter {
    inner: Arc<dyn PlatformAdapter>,
}

impl ScrubbedAdapter {
    pub fn wrap(inner: Arc<dyn PlatformAdapter>) -> Arc<dyn PlatformAdapter> {
        Arc::new(ScrubbedAdapter { inner })
    }
}

/// `message` with its text and button labels scrubbed.
fn scrubbed(mut message: OutgoingMessage) -> OutgoingMessage {
    message.text = crate::secrets::scrub_string(message.text);
    for button in message.buttons.iter_mut().flatten() {
        button.label = crate::secrets::scrub_string(std::mem::take(&mut button.label));
    }
    message
}

#[async_trait]
impl PlatformAdapter for ScrubbedAdapter {
    fn platform(&self) -> Platform {
        self.inner.platform()
    }

    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
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
        self.inner.send(to, scrubbed(message)).await
    }

    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        self.inner.edit(target, scrubbed(message)).await
    }

    async fn answer_press(
        &self,
        press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError> {
        let answer = match answer {
            PressAnswer::Ack => PressAnswer::Ack,
            PressAnswer::Update(message) => PressAnswer::Update(scrubbed(message)),
            PressAnswer::Private(text) => PressAnswer::Private(crate::secrets::scrub_string(text)),
        };
        self.inner.answer_press(press, answer).await
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
