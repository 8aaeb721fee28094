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
mod reader;
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
    Activity, Attachment, ButtonPress, Capabilities, ChatAddress, ChatId, InboundSink, LengthUnit,
    MessageRef, OutgoingFile, OutgoingMessage, Platform, PlatformAdapter, PlatformError,
    PressAnswer, User, UserId,
};
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
                forms: false,
                menus: false,
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
        self.read_lines(&sink, &shutdown).await
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

    /// Writes the voice note into the outbox and prints its path.
    async fn send_voice(
        &self,
        voice: switchboard_platform::OutgoingVoice,
    ) -> Result<MessageRef, PlatformError> {
        let caption = format!("🔊 Voice reply ({:.1} s)", voice.duration_secs);
        let file = OutgoingFile::document(voice.to, "voice-reply.ogg", voice.bytes);
        let path = self.outbox.write(&file).await?;
        let id = self.screen().print_file(&caption, &path);
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
            PressAnswer::Form(_) => return Err(PlatformError::Unsupported("open forms")),
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
