//! How much of an approval's summary a card shows: all of it when short, else
//! the start, the size and a pointer to the full text sent as a file — so a
//! card is always one message (buttons on it) and every edit of it fits.

use switchboard_platform::{measure, LengthUnit};

/// The most characters of a summary a card shows. Sized so the whole card —
/// with names, reason and hints clipped too — fits Discord's 2,000
/// characters and Telegram's 4,096 UTF-16 units after rendering.
pub const CARD_SHOWN_CHARS: usize = 900;
/// The same bound in UTF-16 units (emoji and other astral characters count twice).
const CARD_SHOWN_UTF16: usize = 1_400;
/// The most lines shown: a payload must not hide below a screen of blank lines.
const CARD_SHOWN_LINES: usize = 20;
/// The most characters of a name or reason on a card.
pub const CARD_NAME_CHARS: usize = 120;

/// What a card shows of a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// The whole summary fits.
    Whole(String),
    /// Only the start fits; the full text goes as the file `file_name`.
    Start {
        start: String,
        /// The summary's length in characters.
        total_chars: usize,
        total_lines: usize,
        file_name: &'static str,
        /// "command" or "request", for the size line.
        noun: &'static str,
    },
}

impl Shown {
    /// Lays out `summary` of a call to `tool`.
    pub fn of(tool: &str, summary: &str) -> Shown {
        let lines = summary.lines().count();
        let fits = summary.chars().count() <= CARD_SHOWN_CHARS
            && measure(summary, LengthUnit::Utf16) <= CARD_SHOWN_UTF16
            && lines <= CARD_SHOWN_LINES;
        if fits {
            return Shown::Whole(summary.to_owned());
        }
        let (noun, file_name) = if tool == "exec_command" {
            ("command", "command.txt")
        } else {
            ("request", "request.txt")
        };
        Shown::Start {
            start: start_of(summary),
            total_chars: summary.chars().count(),
            total_lines: lines,
            file_name,
            noun,
        }
    }

    /// The text that goes inside the card's code block.
    pub fn text(&self) -> &str {
        match self {
            Shown::Whole(s) => s,
            Shown::Start { start, .. } => start,
        }
    }

    /// The line under the code block saying what is not shown (empty when whole).
    pub fn note(&self) -> String {
        match self {
            Shown::Whole(_) => String::new(),
            Shown::Start {
                start,
                total_chars,
                total_lines,
                file_name,
                noun,
            } => format!(
                "\n⚠️ Only the start is shown ({} of {} characters, {} lines). The {noun} is {} \
                 characters; the full text is attached as {file_name}. Read it before you decide.",
                crate::text::grouped(start.chars().count()),
                crate::text::grouped(*total_chars),
                crate::text::grouped(*total_lines),
                crate::text::grouped(*total_chars),
            ),
        }
    }

    /// The file to attach: its name, when only the start is shown.
    pub fn file_name(&self) -> Option<&'static str> {
        match self {
            Shown::Whole(_) => None,
            Shown::Start { file_name, .. } => Some(file_name),
        }
    }
}

/// The start of `summary` within the card's bounds, cut at a character.
fn start_of(summary: &str) -> String {
    let mut out = String::new();
    let (mut chars, mut units) = (0, 0);
    for (lines, line) in summary.split_inclusive('\n').enumerate() {
        if lines >= CARD_SHOWN_LINES {
            break;
        }
        for c in line.chars() {
            if chars + 1 > CARD_SHOWN_CHARS || units + c.len_utf16() > CARD_SHOWN_UTF16 {
                return finish(out);
            }
            chars += 1;
            units += c.len_utf16();
            out.push(c);
        }
    }
    finish(out)
}

fn finish(mut out: String) -> String {
    out.truncate(out.trim_end().len());
    out.push_str(" …");
    out
}

/// `text` in at most [`CARD_NAME_CHARS`] characters, `…` at the end when cut.
pub fn clip_name(text: &str) -> String {
    if text.chars().count() <= CARD_NAME_CHARS {
        return text.to_owned();
    }
    crate::text::clip(text, CARD_NAME_CHARS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_summary_is_shown_whole() {
        let shown = Shown::of("exec_command", "git status");
        assert_eq!(shown, Shown::Whole("git status".into()));
        assert_eq!(shown.note(), "");
        assert_eq!(shown.file_name(), None);
    }

    #[test]
    fn a_long_command_shows_its_start_size_and_file() {
        let command = format!("echo {}", "x".repeat(48_208));
        let shown = Shown::of("exec_command", &command);
        assert_eq!(shown.file_name(), Some("command.txt"));
        assert!(shown.text().starts_with("echo xxx"));
        assert!(shown.text().chars().count() <= CARD_SHOWN_CHARS + 2);
        let note = shown.note();
        assert!(
            note.contains(
                "The command is 48,213 characters; the full text is attached as command.txt"
            ),
            "{note}"
        );
    }

    #[test]
    fn astral_characters_count_twice_for_telegram() {
        let summary = "😀".repeat(CARD_SHOWN_CHARS);
        let shown = Shown::of("write_file", &summary);
        assert_eq!(shown.file_name(), Some("request.txt"));
        assert!(measure(shown.text(), LengthUnit::Utf16) <= CARD_SHOWN_UTF16 + 2);
    }

    #[test]
    fn many_short_lines_are_cut_by_lines() {
        let summary = format!("{}rm -rf data", "\n".repeat(40));
        let shown = Shown::of("exec_command", &summary);
        assert!(
            shown.file_name().is_some(),
            "a payload below 40 blank lines is not whole"
        );
        assert!(shown.text().lines().count() <= CARD_SHOWN_LINES);
        assert!(shown.note().contains("41 lines"), "{}", shown.note());
    }

    #[test]
    fn numbers_are_grouped_and_names_clipped() {
        assert_eq!(crate::text::grouped(7), "7");
        assert_eq!(crate::text::grouped(1_000), "1,000");
        assert_eq!(crate::text::grouped(48_213), "48,213");
        assert_eq!(crate::text::grouped(5_000_000), "5,000,000");
        assert_eq!(clip_name("bob"), "bob");
        assert_eq!(clip_name(&"n".repeat(500)).chars().count(), CARD_NAME_CHARS);
    }
}
