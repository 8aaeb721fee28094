//! A terminal channel on the platform contract: the local default for `switchboard chat`.
//!
//! Lines typed (or piped) on stdin become inbound messages; answers stream to
//! stdout, as styled Markdown on a terminal and as the exact text otherwise.
//! An approval card's buttons are answered with their one-key shortcuts
//! (y/a/e/n). The console reads in lock-step: the next line is read (and on a
//! terminal the next `> ` prompt shown) only once the previous one was answered
//! or a card waits for a key, so scripts work without a TTY. At end of input a
//! card still waiting is denied (nobody is left to answer it), so the turn
//! ends and the process can exit.

mod inert;
mod outbox;
mod render;
mod style;

use async_trait::async_trait;
use outbox::Outbox;
use render::Screen;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{
    Activity, Addressed, ButtonPress, Capabilities, ChatAddress, ChatId, ChatKind, Inbound,
    InboundMessage, InboundSink, LengthUnit, MessageId, MessageRef, OutgoingFile, OutgoingMessage,
    Platform, PlatformAdapter, PlatformError, PressAnswer, PressHandle, User, UserId,
};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the reader waits for in lock-step mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Idle,
    CardShown,
    PressAnswered,
}

/// The console channel.
pub struct ConsoleAdapter {
    caps: Capabilities,
    screen: Mutex<Screen<Box<dyn Write + Send>>>,
    signals_tx: mpsc::UnboundedSender<Signal>,
    signals_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Signal>>,
    lockstep: bool,
    user: User,
    outbox: Outbox,
}

impl ConsoleAdapter {
    /// A console on stdout; `lockstep` is for piped stdin (no TTY). Answers
    /// are shown as styled Markdown when stdout is a terminal.
    pub fn stdio(lockstep: bool) -> Arc<ConsoleAdapter> {
        let styled = style::Styler::wanted(std::io::stdout().is_terminal());
        Self::build(Box::new(std::io::stdout()), lockstep, styled)
    }

    /// A console writing the exact text to `out` (no styling).
    pub fn with_output(out: Box<dyn Write + Send>, lockstep: bool) -> Arc<ConsoleAdapter> {
        Self::build(out, lockstep, false)
    }

    fn build(out: Box<dyn Write + Send>, lockstep: bool, styled: bool) -> Arc<ConsoleAdapter> {
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        Arc::new(ConsoleAdapter {
            caps: Capabilities {
                max_message_len: 100_000,
                length_unit: LengthUnit::Chars,
                can_edit: true,
                buttons: true,
                threads: false,
                min_edit_interval: Duration::ZERO,
                private_answers: true,
                max_upload_bytes: crate::outbox::MAX_FILE_BYTES,
            },
            screen: Mutex::new(if styled {
                Screen::styled(out)
            } else {
                Screen::new(out)
            }),
            signals_tx,
            signals_rx: tokio::sync::Mutex::new(signals_rx),
            lockstep,
            outbox: Outbox::new(Outbox::default_dir()),
            user: User {
                id: UserId(0),
                display_name: "you".into(),
                is_bot: false,
                is_approver: true,
            },
        })
    }

    /// The console's one chat.
    pub fn chat() -> ChatAddress {
        ChatAddress::new(Platform::Console, ChatId(0), None)
    }

    fn screen(&self) -> std::sync::MutexGuard<'_, Screen<Box<dyn Write + Send>>> {
        self.screen.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn signal(&self, s: Signal) {
        let _ = self.signals_tx.send(s);
    }

    /// Waits until one of `wanted` arrives: the next line is read (and, on a
    /// terminal, the next prompt shown) once the answer is complete or a card
    /// waits for a key.
    async fn wait_for(&self, wanted: &[Signal], shutdown: &CancellationToken) {
        let mut rx = self.signals_rx.lock().await;
        loop {
            tokio::select! {
                s = rx.recv() => match s {
                    Some(s) if wanted.contains(&s) => return,
                    Some(_) => continue,
                    None => return,
                },
                () = shutdown.cancelled() => return,
            }
        }
    }

    fn drain_signals(&self) {
        if let Ok(mut rx) = self.signals_rx.try_lock() {
            while rx.try_recv().is_ok() {}
        }
    }

    /// At end of input nobody can answer a pending card any more: deny it, so
    /// the paused turn ends now instead of when the card expires.
    async fn deny_pending_card(
        &self,
        sink: &InboundSink,
        shutdown: &CancellationToken,
    ) -> Result<(), PlatformError> {
        let Some(press) = self.press_for("n") else {
            return Ok(());
        };
        self.screen()
            .print_notice_line("(end of input: denying the pending approval)");
        self.drain_signals();
        sink.send(Inbound::ButtonPress(press))
            .await
            .map_err(|_| PlatformError::Closed)?;
        self.wait_for(&[Signal::PressAnswered], shutdown).await;
        Ok(())
    }

    fn press_for(&self, line: &str) -> Option<ButtonPress> {
        let key = line.trim().chars().next()?;
        if line.trim().chars().count() != 1 {
            return None;
        }
        let action = self.screen().card_action(key)?;
        Some(ButtonPress {
            chat: Self::chat(),
            chat_kind: ChatKind::Dm,
            user: self.user.clone(),
            action,
            message: None,
            handle: PressHandle(format!("console-{key}")),
            timestamp: chrono::Utc::now(),
        })
    }
}

#[async_trait]
impl PlatformAdapter for ConsoleAdapter {
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
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut next_id = 1_i64;
        loop {
            self.screen().prompt(!self.lockstep);
            let line = tokio::select! {
                l = lines.next_line() => l.map_err(|e| PlatformError::Network(format!("stdin: {e}")))?,
                () = shutdown.cancelled() => return Ok(()),
            };
            let Some(line) = line else {
                self.deny_pending_card(&sink, &shutdown).await?;
                return Ok(());
            };
            if line.trim().is_empty() {
                continue;
            }
            self.drain_signals();
            if let Some(press) = self.press_for(&line) {
                let is_edit = line.trim() == "e";
                sink.send(Inbound::ButtonPress(press))
                    .await
                    .map_err(|_| PlatformError::Closed)?;
                self.wait_for(&[Signal::PressAnswered], &shutdown).await;
                if !is_edit {
                    self.wait_for(&[Signal::Idle, Signal::CardShown], &shutdown)
                        .await;
                }
                continue;
            }
            let msg = InboundMessage {
                chat: Self::chat(),
                chat_kind: ChatKind::Dm,
                user: self.user.clone(),
                message_id: MessageId(next_id),
                text: line,
                reply_to: None,
                addressed: Addressed::Dm,
                attachments: Vec::new(),
                timestamp: chrono::Utc::now(),
            };
            next_id += 1;
            sink.send(Inbound::Message(msg))
                .await
                .map_err(|_| PlatformError::Closed)?;
            self.wait_for(&[Signal::Idle, Signal::CardShown], &shutdown)
                .await;
        }
    }

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let has_card = !message.buttons.is_empty();
        let id = self.screen().print_new(&message);
        if has_card {
            self.signal(Signal::CardShown);
        }
        Ok(MessageRef { chat: *to, id })
    }

    /// Writes the file into the outbox and prints its path.
    async fn send_file(&self, file: OutgoingFile) -> Result<MessageRef, PlatformError> {
        let path = self.outbox.write(&file).await?;
        let caption = file.caption.as_deref().unwrap_or_default();
        let id = self.screen().print_file(caption, &path);
        Ok(MessageRef { chat: file.to, id })
    }

    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        self.screen().print_edit(target.id, &message);
        Ok(())
    }

    async fn answer_press(
        &self,
        _press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError> {
        match answer {
            PressAnswer::Update(m) => self.screen().print_card_update(&m),
            PressAnswer::Private(text) => self.screen().print_notice(&text),
            PressAnswer::Ack => {}
        }
        self.signal(Signal::PressAnswered);
        Ok(())
    }

    async fn activity(&self, _chat: &ChatAddress, activity: Activity) -> Result<(), PlatformError> {
        if matches!(activity, Activity::Idle | Activity::Answered) {
            self.screen().end_block();
            self.signal(Signal::Idle);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ActionId, Button, ButtonStyle};

    fn card(id: u32) -> OutgoingMessage {
        let b = |k: char, label: &str| Button {
            label: label.into(),
            action: ActionId::parse(&format!("ap:{id}:{k}")).unwrap(),
            style: ButtonStyle::Primary,
            shortcut: Some(k),
        };
        OutgoingMessage::text("Run `ls`?").with_buttons(vec![vec![b('y', "Allow"), b('n', "Deny")]])
    }

    #[tokio::test]
    async fn a_key_after_a_card_decided_elsewhere_is_a_message_again() {
        let console = ConsoleAdapter::with_output(Box::new(std::io::sink()), true);
        let shown = console
            .send(&ConsoleAdapter::chat(), card(7))
            .await
            .unwrap();
        let press = console.press_for("y").expect("a pending card takes `y`");
        assert_eq!(press.action.to_string(), "ap:7:y");
        // `/approve 7 allow` decided it: the core edits the card to its final state.
        console
            .edit(&shown, OutgoingMessage::text("✅ Allowed by you"))
            .await
            .unwrap();
        assert!(
            console.press_for("y").is_none(),
            "`y` now goes to the agent as a message"
        );
    }
}
