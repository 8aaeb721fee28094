//! What the console prints: streamed text as suffixes, cards with key hints.

use crate::inert::inert;
use crate::style::Styler;
use std::io::Write;
use switchboard_platform::{Button, MessageId, OutgoingMessage};

/// The terminal's state: what was printed last, and the card waiting for a key.
pub(crate) struct Screen<W: Write> {
    out: W,
    next_id: i64,
    /// The message printed last and its text, so edits that extend it print only the new part.
    last: Option<(MessageId, String)>,
    /// The buttons of the card waiting for a key (empty: no card pending).
    card: Vec<Button>,
    /// The message carrying `card`, so an edit of it (decided by `/approve`,
    /// or expired) can retire the buttons.
    card_id: Option<MessageId>,
    /// The card decided last: shown once as one line, later edits of it are not shown.
    decided: Option<MessageId>,
    mid_line: bool,
    /// Markdown styling of message text (a terminal only).
    styler: Option<Styler>,
    /// The spinner's frame on screen while the bot works (a live terminal only).
    spinner: Option<usize>,
    /// The prompt is the last thing on a live terminal: output erases it
    /// first and [`Screen::restore_prompt`] shows it again below.
    prompt_shown: bool,
    reprompt: bool,
    /// The message shown as the one status line just above the cursor (a
    /// live terminal), so its next edit replaces that line.
    status: Option<MessageId>,
}

/// Frames of the spinner shown while the model thinks or a tool runs.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl<W: Write> Screen<W> {
    pub(crate) fn new(out: W) -> Self {
        Screen {
            out,
            next_id: 1,
            last: None,
            card: Vec::new(),
            card_id: None,
            decided: None,
            mid_line: false,
            styler: None,
            spinner: None,
            prompt_shown: false,
            reprompt: false,
            status: None,
        }
    }

    /// A styled screen on a terminal `width` columns wide: partial lines are
    /// shown as they stream and a spinner shows while the bot works.
    pub(crate) fn live(out: W, width: usize) -> Self {
        Screen {
            styler: Some(Styler::live(width)),
            ..Screen::new(out)
        }
    }

    /// The bot works (a turn runs): show the spinner, or advance it. Only
    /// on a live terminal, and only at the start of a line.
    pub(crate) fn spin(&mut self) {
        // Not while a card waits for an answer typed on this line.
        if !self.is_live() || !self.card.is_empty() {
            return;
        }
        let frame = match self.spinner {
            Some(f) => (f + 1) % SPINNER.len(),
            None if self.mid_line => return,
            None => 0,
        };
        self.spinner = Some(frame);
        let _ = write!(self.out, "\r{} ", SPINNER[frame]);
        let _ = self.out.flush();
    }

    /// The turn is over: no spinner.
    pub(crate) fn stop_spinner(&mut self) {
        self.clear_spinner();
    }

    fn clear_spinner(&mut self) {
        if self.spinner.take().is_some() {
            let _ = self.out.write_all(b"\r\x1b[2K");
        }
    }

    /// A screen that shows message text as styled Markdown (for a terminal).
    pub(crate) fn styled(out: W) -> Self {
        Screen {
            styler: Some(Styler::default()),
            ..Screen::new(out)
        }
    }

    pub(crate) fn print_new(&mut self, m: &OutgoingMessage) -> MessageId {
        let id = MessageId(self.next_id);
        self.next_id += 1;
        self.break_line();
        self.reset_style();
        self.write_md(&m.text);
        if !m.buttons.is_empty() {
            self.show_card(id, m);
        } else {
            self.last = Some((id, m.text.clone()));
        }
        id
    }

    /// Makes `m`'s buttons the pending card and prints their key hints.
    fn show_card(&mut self, id: MessageId, m: &OutgoingMessage) {
        self.card = m.buttons.iter().flatten().cloned().collect();
        self.card_id = Some(id);
        let hints: Vec<String> = self
            .card
            .iter()
            .map(|b| match b.shortcut {
                Some(k) => format!("[{k}] {}", b.label),
                None => b.label.clone(),
            })
            .collect();
        self.write(&format!("\n{}\n", hints.join("   ")));
        self.mid_line = false;
        self.last = None;
    }

    pub(crate) fn print_edit(&mut self, id: MessageId, m: &OutgoingMessage) {
        if self.decided == Some(id) && m.buttons.is_empty() {
            // Its decision is on screen already.
            return;
        }
        if self.card_id == Some(id) {
            // The pending card changed elsewhere (a `/approve` decision or
            // expiry): show its new state; without buttons it takes no keys.
            if m.buttons.is_empty() {
                self.print_card_update(m);
            } else {
                self.card.clear();
                self.card_id = None;
                self.break_line();
                self.reset_style();
                self.write_md(&m.text);
                self.show_card(id, m);
            }
            return;
        }
        let extends_last = matches!(&self.last, Some((last_id, shown)) if *last_id == id && m.text.starts_with(shown.as_str()));
        if self.is_live() && !extends_last {
            // Progress of a background task: one line, replaced in place.
            self.print_status(id, &m.text);
            return;
        }
        match &self.last {
            Some((last_id, shown)) if *last_id == id && m.text.starts_with(shown.as_str()) => {
                let suffix = m.text[shown.len()..].to_owned();
                self.write_md(&suffix);
                self.last = Some((id, m.text.clone()));
            }
            Some((last_id, shown)) if *last_id == id && *shown == m.text => {}
            _ => {
                self.break_line();
                self.reset_style();
                self.write_md(&m.text);
                self.last = Some((id, m.text.clone()));
            }
        }
    }

    fn is_live(&self) -> bool {
        self.styler.as_ref().is_some_and(Styler::is_live)
    }

    /// `text` as the one status line of message `id`: replaces that line
    /// when it is still the last one (above the prompt), else starts it.
    fn print_status(&mut self, id: MessageId, text: &str) {
        let width = self.styler.as_ref().map_or(80, Styler::width);
        let line = status_line(&inert(text), width);
        let replace = self.status == Some(id) && !self.mid_line;
        self.clear_spinner();
        self.hide_prompt();
        if replace {
            self.raw("\x1b[1A\x1b[2K");
        } else {
            self.break_line();
            self.reset_style();
        }
        self.raw(&format!("{line}\n"));
        self.mid_line = false;
        self.last = None;
        self.status = Some(id);
    }

    /// After output that arrived at the prompt: the prompt again, below it.
    pub(crate) fn restore_prompt(&mut self) {
        if self.reprompt {
            self.reprompt = false;
            self.break_line();
            self.raw("> ");
            self.prompt_shown = true;
        }
    }

    /// A line was typed at the prompt: the cursor is on a fresh line.
    pub(crate) fn input_taken(&mut self) {
        self.prompt_shown = false;
        self.reprompt = false;
    }

    fn hide_prompt(&mut self) {
        if self.prompt_shown {
            self.prompt_shown = false;
            self.reprompt = true;
            self.raw("\r\x1b[2K");
        }
    }

    /// Written as is, without touching what the screen tracks.
    fn raw(&mut self, text: &str) {
        let _ = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
    }

    /// The pending card was decided: its first line (the decision) only,
    /// since the card itself is on screen above.
    pub(crate) fn print_card_update(&mut self, m: &OutgoingMessage) {
        self.card.clear();
        self.decided = self.card_id.take();
        self.break_line();
        self.reset_style();
        let head = m.text.lines().next().unwrap_or_default();
        self.write_md(&format!("{head}\n"));
        self.mid_line = false;
        self.last = None;
    }

    pub(crate) fn print_notice(&mut self, text: &str) {
        self.break_line();
        self.write(&format!("(only you see this) {text}\n"));
        self.mid_line = false;
    }

    /// A file written to the outbox: its caption, then its path.
    pub(crate) fn print_file(&mut self, caption: &str, path: &std::path::Path) -> MessageId {
        let id = MessageId(self.next_id);
        self.next_id += 1;
        self.break_line();
        self.reset_style();
        if !caption.is_empty() {
            self.write_md(caption);
            self.break_line();
        }
        self.write(&format!("📎 file saved to {}\n", path.display()));
        self.mid_line = false;
        self.last = None;
        id
    }

    /// A line of the console's own (not from the agent).
    pub(crate) fn print_notice_line(&mut self, text: &str) {
        self.break_line();
        self.write(&format!("{text}\n"));
    }

    /// The buttons of the card waiting for an answer (empty: none).
    pub(crate) fn card_buttons(&self) -> &[Button] {
        &self.card
    }

    /// The action of the pending card's button with shortcut `key`.
    #[cfg(test)]
    pub(crate) fn card_action(&self, key: char) -> Option<switchboard_platform::ActionId> {
        self.card
            .iter()
            .find(|b| b.shortcut == Some(key.to_ascii_lowercase()))
            .map(|b| b.action.clone())
    }

    pub(crate) fn end_block(&mut self) {
        self.break_line();
        self.reset_style();
        self.last = None;
    }

    pub(crate) fn prompt(&mut self, show: bool) {
        if show {
            self.break_line();
            self.write("> ");
            self.mid_line = false;
            self.prompt_shown = self.is_live();
            self.reprompt = false;
        }
    }

    fn break_line(&mut self) {
        if self.mid_line {
            self.write_md("\n");
        }
        self.mid_line = false;
    }

    fn reset_style(&mut self) {
        if let Some(styler) = &mut self.styler {
            styler.reset();
        }
    }

    /// Message text: styled a line at a time on a terminal, never with the
    /// text's own control characters (see `inert`).
    fn write_md(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let shown = inert(text);
        match &mut self.styler {
            Some(styler) if styler.is_live() => {
                let styled = styler.feed_live(&shown);
                self.emit(&styled);
            }
            Some(styler) => {
                let styled = styler.feed(&shown);
                self.emit(&styled);
            }
            None => self.emit(&shown),
        }
        self.mid_line = !text.ends_with('\n');
    }

    /// The console's own output (prompts, key hints, notices), as is; a
    /// styled line still being streamed is shown first.
    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(pending) = self.styler.as_mut().map(Styler::flush) {
            self.emit(&pending);
        }
        // Notices and button labels carry text from the core too.
        self.emit(&inert(text));
        self.mid_line = !text.ends_with('\n');
    }

    fn emit(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.clear_spinner();
        self.hide_prompt();
        self.status = None;
        // A closed stdout (e.g. `| head`) must not crash the gateway.
        let _ = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
    }
}

/// `text` on one row of a `width`-column terminal: its lines joined, clipped.
fn status_line(text: &str, width: usize) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" · ");
    // In columns: a wide character (CJK, most emoji) takes two.
    let max = width.saturating_sub(1).max(1);
    if unicode_width::UnicodeWidthStr::width(joined.as_str()) <= max {
        return joined;
    }
    let mut clipped = String::new();
    let mut cols = 0;
    for c in joined.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if cols + w > max.saturating_sub(1) {
            break;
        }
        cols += w;
        clipped.push(c);
    }
    clipped.push('…');
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ActionId, ButtonStyle};

    #[test]
    fn a_status_line_is_clipped_by_columns_not_characters() {
        // 20 columns: 19 usable, the last for the cursor.
        let line = status_line("下载进度很慢但还在继续下载中", 20);
        assert!(line.ends_with('…'), "{line}");
        assert!(
            unicode_width::UnicodeWidthStr::width(line.as_str()) <= 19,
            "{line}"
        );
        assert_eq!(status_line("short", 20), "short");
    }

    fn text(s: &str) -> OutgoingMessage {
        OutgoingMessage::text(s)
    }

    #[test]
    fn streamed_edits_print_only_new_text() {
        let mut s = Screen::new(Vec::new());
        let id = s.print_new(&text("Hel"));
        s.print_edit(id, &text("Hello"));
        s.print_edit(id, &text("Hello, world"));
        s.print_edit(id, &text("Hello, world"));
        s.end_block();
        assert_eq!(String::from_utf8(s.out).unwrap(), "Hello, world\n");
    }

    #[test]
    fn a_terminal_gets_styled_lines_and_the_same_words() {
        let mut s = Screen::styled(Vec::new());
        let id = s.print_new(&text("**Hi** th"));
        s.print_edit(id, &text("**Hi** there\n- `a`"));
        s.end_block();
        // A card's last line is shown (styled) before its key hints.
        s.print_new(&text("Run **this**?").with_buttons(approval_buttons(5)));
        let out = String::from_utf8(s.out).unwrap();
        assert!(out.starts_with("\x1b[1mHi\x1b[22m there\n"), "{out:?}");
        assert!(out.contains("\x1b[36ma\x1b[39m"), "{out:?}");
        let plain: String = {
            let mut p = String::new();
            let mut skip = false;
            for c in out.chars() {
                match (skip, c) {
                    (false, '\x1b') => skip = true,
                    (true, 'm') => skip = false,
                    (false, c) => p.push(c),
                    _ => {}
                }
            }
            p
        };
        assert_eq!(
            plain, "Hi there\n• a\nRun this?\n[y] Ly   [n] Ln\n",
            "{out:?}"
        );
    }

    #[test]
    fn a_card_with_terminal_controls_prints_inert() {
        for styled in [false, true] {
            let mut s = if styled {
                Screen::styled(Vec::new())
            } else {
                Screen::new(Vec::new())
            };
            let card = "Run?\n```\n$ touch X #\r$ echo SAFE\n$ a\x1b[2K\x1b[1Gb\x1b]52;c;cm0gLXJm\x07 \u{9b}2J\n```";
            s.print_new(&text(card).with_buttons(approval_buttons(6)));
            s.print_notice("press \x1b]52;c;eA==\x07");
            let out = String::from_utf8(s.out).unwrap();
            assert!(out.contains("$ touch X #␍$ echo SAFE"), "{out:?}");
            assert!(
                out.contains("a␛[2K␛[1Gb␛]52;c;cm0gLXJm␇ ⟨U+009B⟩2J"),
                "{out:?}"
            );
            assert!(out.contains("press ␛]52;c;eA==␇"), "{out:?}");
            assert!(!out.contains('\r') && !out.contains('\x07'), "{out:?}");
            assert!(
                !out.contains("\x1b]") && !out.contains("\x1b[2K"),
                "{out:?}"
            );
            assert!(!out.contains('\u{9b}'), "{out:?}");
        }
        // Markdown entities decode to controls on a terminal: inert too.
        let mut s = Screen::styled(Vec::new());
        s.print_new(&text("see &#27;]52;c;eA==&#7; [x](&#27;[2J) `&#13;`\n"));
        let out = String::from_utf8(s.out).unwrap();
        assert!(out.contains("see ␛]52;c;eA==␇"), "{out:?}");
        assert!(
            !out.contains("\x1b]") && !out.contains("\x1b[2J"),
            "{out:?}"
        );
        assert!(!out.contains('\x07'), "{out:?}");
    }

    #[test]
    fn cards_list_shortcuts_and_map_keys_to_actions() {
        let mut s = Screen::new(Vec::new());
        let b = |k: char| Button {
            label: format!("L{k}"),
            action: ActionId::parse(&format!("ap:1:{k}")).unwrap(),
            style: ButtonStyle::Primary,
            shortcut: Some(k),
        };
        s.print_new(&text("Approve?").with_buttons(vec![vec![b('y'), b('n')]]));
        assert_eq!(
            s.card_action('Y').map(|a| a.to_string()),
            Some("ap:1:y".into())
        );
        assert!(s.card_action('x').is_none());
        s.print_card_update(&text("Allowed"));
        assert!(s.card_action('y').is_none());
        let out = String::from_utf8(s.out).unwrap();
        assert!(out.contains("[y] Ly   [n] Ln"), "{out}");
    }

    fn approval_buttons(id: u32) -> Vec<Vec<Button>> {
        let b = |k: char| Button {
            label: format!("L{k}"),
            action: ActionId::parse(&format!("ap:{id}:{k}")).unwrap(),
            style: ButtonStyle::Primary,
            shortcut: Some(k),
        };
        vec![vec![b('y'), b('n')]]
    }

    #[test]
    fn a_card_edited_to_its_final_state_no_longer_takes_keys() {
        let mut s = Screen::new(Vec::new());
        let card = s.print_new(&text("Run `ls`?").with_buttons(approval_buttons(1)));
        assert!(s.card_action('y').is_some());
        // Decided elsewhere (`/approve`) or expired: the core edits the card.
        s.print_edit(card, &text("Expired: `ls` was not run."));
        assert!(
            s.card_action('y').is_none(),
            "a one-letter line after a dead card is a message, not a press"
        );
        // An answer streamed after it still prints as usual.
        let answer = s.print_new(&text("OK"));
        s.print_edit(answer, &text("OK, skipped."));
        s.end_block();
        let out = String::from_utf8(s.out).unwrap();
        assert!(
            out.ends_with("Expired: `ls` was not run.\nOK, skipped.\n"),
            "{out:?}"
        );
    }

    #[test]
    fn a_decided_card_is_one_line_printed_once() {
        let mut s = Screen::new(Vec::new());
        let card = s
            .print_new(&text("🔐 Approval needed\n```\nls\n```").with_buttons(approval_buttons(8)));
        let decided = "✅ Allowed once by you\n```\nls\n```";
        // The press is answered with the final card, and the core edits it too.
        s.print_card_update(&text(decided));
        s.print_edit(card, &text(decided));
        let out = String::from_utf8(s.out).unwrap();
        assert!(
            out.ends_with("[y] Ly   [n] Ln\n✅ Allowed once by you\n"),
            "{out:?}"
        );
        assert_eq!(out.matches("ls\n").count(), 1, "{out:?}");
    }

    #[test]
    fn editing_another_message_keeps_the_pending_card() {
        let mut s = Screen::new(Vec::new());
        let status = s.print_new(&text("working 10%"));
        s.print_new(&text("Run `ls`?").with_buttons(approval_buttons(2)));
        s.print_edit(status, &text("working 50%"));
        assert_eq!(
            s.card_action('n').map(|a| a.to_string()),
            Some("ap:2:n".into())
        );
    }

    #[test]
    fn a_card_edited_with_new_buttons_takes_the_new_keys() {
        let mut s = Screen::new(Vec::new());
        let card = s.print_new(&text("Run `ls`?").with_buttons(approval_buttons(3)));
        s.print_edit(
            card,
            &text("Run `ls -la`?").with_buttons(approval_buttons(4)),
        );
        assert_eq!(
            s.card_action('y').map(|a| a.to_string()),
            Some("ap:4:y".into())
        );
        let out = String::from_utf8(s.out).unwrap();
        assert!(out.contains("Run `ls -la`?\n[y] Ly   [n] Ln\n"), "{out:?}");
    }

    #[test]
    fn a_live_terminal_shows_partial_lines_then_restyles_them() {
        let mut s = Screen::live(Vec::new(), 80);
        let id = s.print_new(&text("**Hi** th"));
        // The unfinished line is on screen at once, as plain text.
        assert_eq!(String::from_utf8_lossy(&s.out), "**Hi** th");
        s.print_edit(id, &text("**Hi** there"));
        assert_eq!(String::from_utf8_lossy(&s.out), "**Hi** there");
        // Completed: erased and printed again styled; the next part live.
        s.print_edit(id, &text("**Hi** there\nmo"));
        s.end_block();
        let out = String::from_utf8(s.out).unwrap();
        assert_eq!(
            out, "**Hi** there\r\x1b[2K\x1b[1mHi\x1b[22m there\nmo\r\x1b[2Kmo\n",
            "{out:?}"
        );
    }

    #[test]
    fn a_wrapped_partial_line_is_erased_on_every_row() {
        let mut s = Screen::live(Vec::new(), 10);
        let id = s.print_new(&text("abcdefghijklmnopqrstuvwxy"));
        s.print_edit(id, &text("abcdefghijklmnopqrstuvwxyz\n"));
        let out = String::from_utf8(s.out).unwrap();
        // 25 columns on a 10-column terminal: three rows to erase.
        assert_eq!(
            out,
            "abcdefghijklmnopqrstuvwxy\r\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2Kabcdefghijklmnopqrstuvwxyz\n",
            "{out:?}"
        );
    }

    #[test]
    fn the_spinner_turns_and_goes_before_the_answer() {
        let mut s = Screen::live(Vec::new(), 80);
        s.spin();
        s.spin();
        let id = s.print_new(&text("ok"));
        s.print_edit(id, &text("ok, done\n"));
        s.spin();
        s.stop_spinner();
        let out = String::from_utf8(s.out).unwrap();
        assert_eq!(
            out, "\r⠋ \r⠙ \r\x1b[2Kok\r\x1b[2Kok, done\n\r⠋ \r\x1b[2K",
            "{out:?}"
        );
        // Piped or plain styled output never spins.
        let mut plain = Screen::styled(Vec::new());
        plain.spin();
        assert!(plain.out.is_empty());
    }

    #[test]
    fn background_progress_is_one_line_replaced_in_place_above_the_prompt() {
        let mut s = Screen::live(Vec::new(), 60);
        s.prompt(true);
        let status = s.print_new(&text(
            "⏳ Background task `ab12` · sleep · queued\n[░░░░] 0%",
        ));
        s.restore_prompt();
        for step in 1..=20 {
            s.print_edit(
                status,
                &text(&format!(
                    "⏳ Background task `ab12` · sleep · step {step}\n[██░░] {step}%\nworking"
                )),
            );
            s.restore_prompt();
        }
        s.print_new(&text("✅ Background task `ab12` finished."));
        s.restore_prompt();
        let out = String::from_utf8(s.out).unwrap();
        // 20 updates: 20 newlines (each replacing the last), not 60.
        let status_rows = out.matches("step ").count();
        assert_eq!(status_rows, 20, "{out:?}");
        // The first block (two lines), then one row per update, then the end.
        assert_eq!(out.matches('\n').count(), 2 + 20 + 1, "{out:?}");
        assert_eq!(out.matches("\x1b[1A\x1b[2K").count(), 19, "{out:?}");
        // Each update is one row within the width, never after the prompt.
        assert!(!out.contains("> ⏳") && !out.contains("> ✅"), "{out:?}");
        // Clipped by columns: the hourglass takes two.
        assert!(
            out.contains("⏳ Background task `ab12` · sleep · step 20 · [██░░] 20% ·…\n"),
            "{out:?}"
        );
        // The prompt comes back after the task's notification.
        assert!(out.ends_with("ab12\x1b[39m finished.\n> "), "{out:?}");
    }

    #[test]
    fn an_answer_after_a_typed_line_is_not_interrupted_by_the_prompt() {
        let mut s = Screen::live(Vec::new(), 60);
        s.prompt(true);
        s.input_taken();
        let id = s.print_new(&text("Hel"));
        s.restore_prompt();
        s.print_edit(id, &text("Hello\n"));
        s.restore_prompt();
        let out = String::from_utf8(s.out).unwrap();
        assert_eq!(out, "> Hel\r\x1b[2KHello\n", "{out:?}");
    }

    #[test]
    fn no_spinner_while_a_card_waits_for_its_answer() {
        let mut s = Screen::live(Vec::new(), 80);
        s.print_new(&text("Run `ls`?").with_buttons(approval_buttons(9)));
        let before = s.out.len();
        s.spin();
        assert_eq!(s.out.len(), before, "{:?}", String::from_utf8_lossy(&s.out));
    }
}
