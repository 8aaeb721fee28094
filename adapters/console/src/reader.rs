//! The reader's side of the console: lines from stdin become messages or
//! answers to the open card, in lock-step with the answers on piped input;
//! Ctrl-C stops an answer, denies a card, or (twice at the prompt) quits.

use crate::{answer, attach, ConsoleAdapter, Signal};
use switchboard_platform::{
    Addressed, Attachment, ButtonPress, ChatKind, Inbound, InboundMessage, InboundSink, MessageId,
    PlatformError, PressHandle,
};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the reader got while waiting at the prompt.
enum Read {
    Line(Option<String>),
    Interrupt,
}

/// Typed at the prompt: leave the console at once.
fn is_quit(line: &str) -> bool {
    let word = line.trim().to_ascii_lowercase();
    word == "/exit" || word == "/quit"
}

/// Typed at the prompt: stop the answer in progress (or deny an open card).
fn is_stop(line: &str) -> bool {
    line.trim().eq_ignore_ascii_case("/stop")
}

/// The reader's side of a running console: where lines go and what stops it.
struct Io<'a> {
    sink: &'a InboundSink,
    shutdown: &'a CancellationToken,
    interrupts: &'a mut mpsc::UnboundedReceiver<()>,
    next_id: i64,
}

impl ConsoleAdapter {
    /// Reads stdin until it ends, the user quits, or `shutdown`.
    pub(crate) async fn read_lines(
        &self,
        sink: &InboundSink,
        shutdown: &CancellationToken,
    ) -> Result<(), PlatformError> {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut interrupts = self.interrupts_rx.lock().await;
        let mut io = Io {
            sink,
            shutdown,
            interrupts: &mut interrupts,
            next_id: 1,
        };
        // One Ctrl-C at the prompt: the next one quits.
        let mut quit_armed = false;
        loop {
            self.screen().prompt(!self.lockstep);
            let read = tokio::select! {
                l = lines.next_line() => Read::Line(l.map_err(|source| PlatformError::Local { what: "reading stdin".into(), source })?),
                Some(()) = io.interrupts.recv() => Read::Interrupt,
                () = shutdown.cancelled() => return Ok(()),
            };
            // Enter moved the cursor past the prompt: output goes below it.
            self.screen().input_taken();
            let line = match read {
                Read::Interrupt if !self.screen().card_buttons().is_empty() => {
                    self.deny_card(&mut io, "\n(interrupted: denying the approval)")
                        .await?;
                    continue;
                }
                Read::Interrupt if quit_armed => return self.quit_now(true),
                Read::Interrupt => {
                    quit_armed = true;
                    if !self.lockstep {
                        self.screen().print_notice_line("");
                    }
                    self.screen()
                        .print_notice_line("(Ctrl-C again, Ctrl-D, /exit or /quit to quit)");
                    continue;
                }
                // Ctrl-D on a terminal: the user is leaving.
                Read::Line(None) if !self.lockstep => return self.quit_now(true),
                Read::Line(None) => {
                    self.deny_card(&mut io, "(end of input: denying the pending approval)")
                        .await?;
                    return Ok(());
                }
                Read::Line(Some(line)) => line,
            };
            quit_armed = false;
            if line.trim().is_empty() {
                continue;
            }
            if is_quit(&line) {
                return self.quit_now(false);
            }
            if !self.screen().card_buttons().is_empty() {
                self.at_card(&line, &mut io).await?;
                continue;
            }
            self.drain_signals();
            match attach::parse(&line) {
                None => self.send_text(&line, &mut io).await?,
                Some(Ok(a)) => {
                    self.send_message(&a.caption, vec![a.attachment], &mut io)
                        .await?
                }
                Some(Err(problem)) => {
                    self.screen().print_notice_line(&problem);
                    continue;
                }
            }
            self.wait_for(&[Signal::Idle, Signal::CardShown], &mut io)
                .await?;
        }
    }

    /// Waits until one of `wanted` arrives: the next line is read (and, on a
    /// terminal, the next prompt shown) once the answer is complete or a card
    /// waits for an answer. Ctrl-C meanwhile stops the answer (`/stop`).
    async fn wait_for(&self, wanted: &[Signal], io: &mut Io<'_>) -> Result<(), PlatformError> {
        let mut rx = self.signals_rx.lock().await;
        loop {
            tokio::select! {
                s = rx.recv() => match s {
                    Some(s) if wanted.contains(&s) => return Ok(()),
                    Some(_) => continue,
                    None => return Ok(()),
                },
                Some(()) = io.interrupts.recv() => {
                    // Pressing `n` needs the signals too: deny after this wait.
                    if !self.screen().card_buttons().is_empty() {
                        drop(rx);
                        return self.deny_card(io, "(interrupted: denying the approval)").await;
                    }
                    self.screen().print_notice_line("(interrupted: stopping the answer)");
                    self.send_text("/stop", io).await?;
                },
                () = io.shutdown.cancelled() => return Ok(()),
            }
        }
    }

    fn drain_signals(&self) {
        if let Ok(mut rx) = self.signals_rx.try_lock() {
            while rx.try_recv().is_ok() {}
        }
    }

    /// Denies the open card (Ctrl-C, `/stop`, or end of input when nobody is
    /// left to answer it), so the paused turn ends now instead of when the
    /// card expires.
    async fn deny_card(&self, io: &mut Io<'_>, notice: &str) -> Result<(), PlatformError> {
        let Some(press) = self.press_for("n") else {
            return Ok(());
        };
        self.screen().print_notice_line(notice);
        Box::pin(self.press(press, io)).await
    }

    /// Sends a press and waits until it is answered and, unless it asked for
    /// an edit (the next line is the edit), until the turn goes on.
    async fn press(&self, press: ButtonPress, io: &mut Io<'_>) -> Result<(), PlatformError> {
        let is_edit = press.action.as_str().ends_with(":e");
        self.drain_signals();
        io.sink
            .deliver(Inbound::ButtonPress(press))
            .await
            .map_err(|_| PlatformError::Closed)?;
        self.wait_for(&[Signal::PressAnswered], io).await?;
        if !is_edit {
            self.wait_for(&[Signal::Idle, Signal::CardShown], io)
                .await?;
        }
        Ok(())
    }

    /// Sends `text` as the user's message, without waiting for the answer.
    async fn send_text(&self, text: &str, io: &mut Io<'_>) -> Result<(), PlatformError> {
        self.send_message(text, Vec::new(), io).await
    }

    /// Sends `text` with `attachments`, without waiting for the answer: once
    /// the core has kept it (the next line is read only then, so a line
    /// typed is never lost between the terminal and the inbox).
    async fn send_message(
        &self,
        text: &str,
        attachments: Vec<Attachment>,
        io: &mut Io<'_>,
    ) -> Result<(), PlatformError> {
        let msg = InboundMessage {
            chat: Self::chat(),
            chat_kind: ChatKind::Dm,
            user: self.user.clone(),
            message_id: MessageId(io.next_id),
            text: text.to_owned(),
            reply_to: None,
            addressed: Addressed::Dm,
            attachments,
            timestamp: chrono::Utc::now(),
            parent: None,
        };
        io.next_id += 1;
        io.sink
            .deliver(Inbound::Message(msg))
            .await
            .map(|_| ())
            .map_err(|_| PlatformError::Closed)
    }

    /// The press `line` makes on the open card, if it answers it.
    fn press_for(&self, line: &str) -> Option<ButtonPress> {
        let screen = self.screen();
        let button = answer::chosen(screen.card_buttons(), line)?;
        Some(ButtonPress {
            chat: Self::chat(),
            chat_kind: ChatKind::Dm,
            user: self.user.clone(),
            action: button.action.clone(),
            message: None,
            handle: PressHandle(format!("console-{}", button.action)),
            timestamp: chrono::Utc::now(),
            parent: None,
            input: Default::default(),
        })
    }

    /// Leaves now; the shell's prompt comes back on a line of its own.
    fn quit_now(&self, mid_line: bool) -> Result<(), PlatformError> {
        if mid_line && !self.lockstep {
            self.screen().print_notice_line("");
        }
        self.quit.cancel();
        Ok(())
    }

    /// One line typed while a card is open: its answer, `/stop` (deny), an
    /// `/approve` for the gateway, or a reminder of what the card takes.
    async fn at_card(&self, line: &str, io: &mut Io<'_>) -> Result<(), PlatformError> {
        if let Some(press) = self.press_for(line) {
            return self.press(press, io).await;
        }
        if is_stop(line) {
            return self.deny_card(io, "(stopping: denying the approval)").await;
        }
        if line
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("/approve ")
        {
            self.drain_signals();
            self.send_text(line, io).await?;
            return self.wait_for(&[Signal::Idle, Signal::CardShown], io).await;
        }
        let help = answer::help(self.screen().card_buttons());
        self.screen().print_notice_line(&help);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ActionId, Button, ButtonStyle, OutgoingMessage, PlatformAdapter};

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
