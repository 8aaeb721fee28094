//! A terminal channel on the platform contract: the local default for `switchboard chat`.
//!
//! Lines typed (or piped) on stdin become inbound messages; answers stream to
//! stdout, as styled Markdown on a terminal and as the exact text otherwise.
//! An approval card is answered with a button's key, number or word (`y`,
//! `1`, `yes`, `allow`, `always`, `edit`, `no`, `deny`, in any case); any other
//! line while a card is open is not sent anywhere: the console says what it
//! takes and keeps reading. The console reads in lock-step: the next line is
//! read (and on a terminal the next `> ` prompt shown) only once the previous
//! one was answered or a card waits for an answer, so scripts work without a
//! TTY. At end of piped input a card still waiting is denied (nobody is left
//! to answer it), so the turn ends and the process can exit.
//!
//! Ctrl-C ([`ConsoleAdapter::interrupt`]) stops the answer in progress
//! (`/stop`) or denies an open card; at the prompt, a second Ctrl-C in a row,
//! `/exit`, `/quit` or end of input on a terminal (Ctrl-D) quits at once
//! ([`ConsoleAdapter::quit_requested`]).

mod answer;
mod attach;
mod inert;
mod outbox;
mod render;
mod spinner;
mod style;
mod terminal;

use async_trait::async_trait;
use outbox::Outbox;
use render::Screen;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{
    Activity, Addressed, Attachment, ButtonPress, Capabilities, ChatAddress, ChatId, ChatKind,
    Inbound, InboundMessage, InboundSink, LengthUnit, MessageId, MessageRef, OutgoingFile,
    OutgoingMessage, Platform, PlatformAdapter, PlatformError, PressAnswer, PressHandle, User,
    UserId,
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
    screen: Arc<Mutex<Screen<Box<dyn Write + Send>>>>,
    /// A turn runs: the spinner turns (a live terminal only).
    working: Arc<std::sync::atomic::AtomicBool>,
    /// Partial lines and the spinner are shown (a terminal).
    live: bool,
    signals_tx: mpsc::UnboundedSender<Signal>,
    signals_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Signal>>,
    lockstep: bool,
    user: User,
    outbox: Outbox,
    interrupts_tx: mpsc::UnboundedSender<()>,
    interrupts_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
    quit: CancellationToken,
}

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

impl ConsoleAdapter {
    /// A console on stdout; `lockstep` is for piped stdin (no TTY). Answers
    /// are shown as styled Markdown when stdout is a terminal.
    pub fn stdio(lockstep: bool) -> Arc<ConsoleAdapter> {
        let styled = style::Styler::wanted(std::io::stdout().is_terminal());
        let live = styled.then(terminal::width);
        Self::build(Box::new(std::io::stdout()), lockstep, styled, live)
    }

    /// A console writing the exact text to `out` (no styling).
    pub fn with_output(out: Box<dyn Write + Send>, lockstep: bool) -> Arc<ConsoleAdapter> {
        Self::build(out, lockstep, false, None)
    }

    /// `live`: the terminal's width, to stream partial lines and spin.
    fn build(
        out: Box<dyn Write + Send>,
        lockstep: bool,
        styled: bool,
        live: Option<usize>,
    ) -> Arc<ConsoleAdapter> {
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        let (interrupts_tx, interrupts_rx) = mpsc::unbounded_channel();
        Arc::new(ConsoleAdapter {
            caps: Capabilities {
                max_message_len: 100_000,
                length_unit: LengthUnit::Chars,
                // Only a terminal can rewrite what it showed: on pipes a
                // draft and then its final text were both printed, so the
                // core posts each answer once, when it is final.
                can_edit: live.is_some(),
                buttons: true,
                threads: false,
                min_edit_interval: Duration::ZERO,
                private_answers: true,
                max_upload_bytes: crate::outbox::MAX_FILE_BYTES,
                max_download_bytes: crate::outbox::MAX_FILE_BYTES as u64,
                answer_buttons: false,
                local_operator: true,
            },
            screen: Arc::new(Mutex::new(match live {
                Some(width) => Screen::live(out, width),
                None if styled => Screen::styled(out),
                None => Screen::new(out),
            })),
            working: Arc::default(),
            live: live.is_some(),
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
            interrupts_tx,
            interrupts_rx: tokio::sync::Mutex::new(interrupts_rx),
            quit: CancellationToken::new(),
        })
    }

    /// Ctrl-C: stops the answer in progress (as `/stop` does) or denies the
    /// open card; at the prompt it asks for a second one, which quits.
    pub fn interrupt(&self) {
        let _ = self.interrupts_tx.send(());
    }

    /// Cancelled when the user quits (`/exit`, `/quit`, Ctrl-C twice at the
    /// prompt, Ctrl-D on a terminal): the process should stop now, without
    /// waiting for background work.
    pub fn quit_requested(&self) -> CancellationToken {
        self.quit.clone()
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
            .send(Inbound::ButtonPress(press))
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

    /// Sends `text` with `attachments`, without waiting for the answer.
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
            .send(Inbound::Message(msg))
            .await
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

/// The reader's side of a running console: where lines go and what stops it.
struct Io<'a> {
    sink: &'a InboundSink,
    shutdown: &'a CancellationToken,
    interrupts: &'a mut mpsc::UnboundedReceiver<()>,
    next_id: i64,
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
        if self.live {
            spinner::start(
                Arc::clone(&self.screen),
                Arc::clone(&self.working),
                shutdown.clone(),
            );
        }
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        let mut interrupts = self.interrupts_rx.lock().await;
        let mut io = Io {
            sink: &sink,
            shutdown: &shutdown,
            interrupts: &mut interrupts,
            next_id: 1,
        };
        // One Ctrl-C at the prompt: the next one quits.
        let mut quit_armed = false;
        loop {
            self.screen().prompt(!self.lockstep);
            let read = tokio::select! {
                l = lines.next_line() => Read::Line(l.map_err(|e| PlatformError::Network(format!("stdin: {e}")))?),
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

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let has_card = !message.buttons.is_empty();
        let id = {
            let mut screen = self.screen();
            let id = screen.print_new(&message);
            if !has_card {
                screen.restore_prompt();
            }
            id
        };
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

    /// Attachments here are local files: copied from where they are.
    async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
        max_bytes: u64,
    ) -> Result<u64, PlatformError> {
        attach::copy(
            attachment,
            dest,
            max_bytes.min(self.caps.max_download_bytes),
        )
        .await
    }

    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        let mut screen = self.screen();
        screen.print_edit(target.id, &message);
        screen.restore_prompt();
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
        let working = activity == Activity::Typing;
        self.working
            .store(working, std::sync::atomic::Ordering::Relaxed);
        if !working {
            self.screen().stop_spinner();
        }
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
