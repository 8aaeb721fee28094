//! What the console prints: streamed text as suffixes, cards with key hints.

use std::io::Write;
use switchboard_platform::{ActionId, Button, MessageId, OutgoingMessage};

/// The terminal's state: what was printed last, and the card waiting for a key.
pub(crate) struct Screen<W: Write> {
    out: W,
    next_id: i64,
    /// The message printed last and its text, so edits that extend it print only the new part.
    last: Option<(MessageId, String)>,
    card: Vec<Button>,
    mid_line: bool,
}

impl<W: Write> Screen<W> {
    pub(crate) fn new(out: W) -> Self {
        Screen {
            out,
            next_id: 1,
            last: None,
            card: Vec::new(),
            mid_line: false,
        }
    }

    pub(crate) fn print_new(&mut self, m: &OutgoingMessage) -> MessageId {
        let id = MessageId(self.next_id);
        self.next_id += 1;
        self.break_line();
        self.write(&m.text);
        if !m.buttons.is_empty() {
            self.card = m.buttons.iter().flatten().cloned().collect();
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
        } else {
            self.last = Some((id, m.text.clone()));
        }
        id
    }

    pub(crate) fn print_edit(&mut self, id: MessageId, m: &OutgoingMessage) {
        match &self.last {
            Some((last_id, shown)) if *last_id == id && m.text.starts_with(shown.as_str()) => {
                let suffix = m.text[shown.len()..].to_owned();
                self.write(&suffix);
                self.last = Some((id, m.text.clone()));
            }
            Some((last_id, shown)) if *last_id == id && *shown == m.text => {}
            _ => {
                self.break_line();
                self.write(&m.text);
                self.last = Some((id, m.text.clone()));
            }
        }
    }

    pub(crate) fn print_card_update(&mut self, m: &OutgoingMessage) {
        self.card.clear();
        self.break_line();
        self.write(&format!("{}\n", m.text));
        self.mid_line = false;
        self.last = None;
    }

    pub(crate) fn print_notice(&mut self, text: &str) {
        self.break_line();
        self.write(&format!("(only you see this) {text}\n"));
        self.mid_line = false;
    }

    /// The action of the pending card's button with shortcut `key`.
    pub(crate) fn card_action(&self, key: char) -> Option<ActionId> {
        self.card
            .iter()
            .find(|b| b.shortcut == Some(key.to_ascii_lowercase()))
            .map(|b| b.action.clone())
    }

    pub(crate) fn end_block(&mut self) {
        self.break_line();
        self.last = None;
    }

    pub(crate) fn prompt(&mut self, show: bool) {
        if show {
            self.break_line();
            self.write("> ");
            self.mid_line = false;
        }
    }

    fn break_line(&mut self) {
        if self.mid_line {
            self.write("\n");
        }
        self.mid_line = false;
    }

    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        // A closed stdout (e.g. `| head`) must not crash the gateway.
        let _ = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush());
        self.mid_line = !text.ends_with('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::ButtonStyle;

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
}
