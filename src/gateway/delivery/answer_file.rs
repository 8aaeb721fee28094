//! Over-long answers: past [`ANSWER_MAX_CHARS`] an answer goes as the file
//! `answer.md`, with a short head in the chat, instead of hundreds of messages.

use switchboard_platform::{ChatAddress, OutgoingFile};

/// The longest answer posted as messages, in characters; a longer one is sent
/// as `answer.md` (documented in README).
pub const ANSWER_MAX_CHARS: usize = 16_000;
/// The name of the attached answer.
pub(crate) const ANSWER_FILE: &str = "answer.md";
/// How much of a long answer the chat shows.
const HEAD_LINES: usize = 6;
const HEAD_CHARS: usize = 600;

/// Whether `text` goes as a file.
pub(crate) fn too_long(text: &str) -> bool {
    text.chars().nth(ANSWER_MAX_CHARS).is_some()
}

/// The message shown in the chat: the first lines, then a note that the full
/// answer is attached. A code block cut open is closed.
pub(crate) fn head(text: &str) -> String {
    let mut head = String::new();
    for line in text.lines().take(HEAD_LINES) {
        let room = HEAD_CHARS.saturating_sub(head.chars().count());
        if room == 0 {
            break;
        }
        let part: String = line.chars().take(room).collect();
        let cut = part.chars().count() < line.chars().count();
        head.push_str(&part);
        if cut {
            head.push('…');
            break;
        }
        head.push('\n');
    }
    let mut head = head.trim_end().to_owned();
    if head.matches("```").count() % 2 == 1 {
        head.push_str("\n```");
    }
    format!(
        "{head}\n\n📎 _The answer is {} characters; the full answer is attached as {ANSWER_FILE}._",
        crate::text::grouped(text.chars().count())
    )
}

/// The whole answer as `answer.md` for `chat`.
pub(crate) fn file(chat: ChatAddress, text: &str) -> OutgoingFile {
    OutgoingFile::document(chat, ANSWER_FILE, text.as_bytes().to_vec()).with_caption("Full answer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_answers_over_the_cap_go_as_files() {
        assert!(!too_long(&"a".repeat(ANSWER_MAX_CHARS)));
        assert!(too_long(&"a".repeat(ANSWER_MAX_CHARS + 1)));
        // Characters, not bytes.
        assert!(!too_long(&"é".repeat(ANSWER_MAX_CHARS)));
    }

    #[test]
    fn the_head_is_a_few_lines_and_says_the_size() {
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let head = head(&text);
        assert!(head.starts_with("line 0\nline 1\n"), "{head}");
        assert!(!head.contains("line 6\n"), "{head}");
        assert!(
            head.contains("the full answer is attached as answer.md"),
            "{head}"
        );
        assert!(head.contains("98,890 characters"), "{head}");
    }

    #[test]
    fn a_long_first_line_is_clipped_and_an_open_fence_closed() {
        let text = format!("```\n{}", "x".repeat(50_000));
        let head = head(&text);
        assert!(head.chars().count() < 800, "{}", head.chars().count());
        assert_eq!(head.matches("```").count(), 2, "{head}");
    }
}
