//! Markdown for a terminal: answers stream in, so they are styled a line at a
//! time — each complete line is parsed with pulldown-cmark and printed with
//! ANSI attributes (bold, italic, inline code, headings, list bullets, quotes,
//! links with their address); fenced code blocks are tracked across lines and
//! shown in one colour. Only used on a terminal: piped output stays the exact
//! text (scripts read it), and `NO_COLOR` turns it off.

use crate::inert::inert;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

const BOLD: &str = "\x1b[1m";
const NOT_BOLD: &str = "\x1b[22m";
const ITALIC: &str = "\x1b[3m";
const NOT_ITALIC: &str = "\x1b[23m";
const UNDERLINE: &str = "\x1b[4m";
const NOT_UNDERLINE: &str = "\x1b[24m";
const STRIKE: &str = "\x1b[9m";
const NOT_STRIKE: &str = "\x1b[29m";
const DIM: &str = "\x1b[2m";
const CODE: &str = "\x1b[36m";
const NOT_CODE: &str = "\x1b[39m";

/// Line-buffered Markdown styling of one stream of text.
#[derive(Debug, Default)]
pub(crate) struct Styler {
    /// The current line so far (not printed yet).
    partial: String,
    /// Bytes of `partial` already shown unstyled (live streaming).
    shown: usize,
    /// Terminal columns, to know how many rows a shown partial line covers.
    width: usize,
    in_fence: bool,
}

/// Erases the terminal row the cursor is on and returns to its start.
const ERASE_ROW: &str = "\r\x1b[2K";
/// Moves one row up and erases it.
const ERASE_ROW_ABOVE: &str = "\x1b[1A\x1b[2K";

impl Styler {
    /// Whether stdout should be styled: a terminal, colours not refused.
    pub(crate) fn wanted(stdout_is_terminal: bool) -> bool {
        stdout_is_terminal
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var("TERM").map_or(true, |t| t != "dumb")
    }

    /// Adds text; returns the styled lines it completed (each with its `\n`).
    pub(crate) fn feed(&mut self, text: &str) -> String {
        self.partial.push_str(text);
        let Some(end) = self.partial.rfind('\n') else {
            return String::new();
        };
        let complete: String = self.partial.drain(..=end).collect();
        let mut out = String::new();
        for line in complete.split_inclusive('\n') {
            out.push_str(&self.line(line.trim_end_matches('\n')));
            out.push('\n');
        }
        out
    }

    /// A styler for a terminal `width` columns wide that shows partial lines.
    pub(crate) fn live(width: usize) -> Self {
        Styler {
            width: width.max(1),
            ..Styler::default()
        }
    }

    /// The terminal's columns (0: not a live terminal).
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// Whether partial lines are shown as they stream.
    pub(crate) fn is_live(&self) -> bool {
        self.width > 0
    }

    /// Adds streamed text; returns what to print now: the unfinished line's
    /// new part as plain text at once, and each line that completes erased
    /// and printed again styled.
    pub(crate) fn feed_live(&mut self, text: &str) -> String {
        let erase = self.erase_shown();
        let shown_before = self.shown;
        let completed = self.feed(text);
        let mut out = String::new();
        if completed.is_empty() {
            out.push_str(&self.partial[shown_before..]);
        } else {
            out.push_str(&erase);
            out.push_str(&completed);
            out.push_str(&self.partial);
        }
        self.shown = self.partial.len();
        out
    }

    /// What erases the unstyled partial line on screen (its rows), if any.
    fn erase_shown(&self) -> String {
        if self.shown == 0 || !self.is_live() {
            return String::new();
        }
        let rows = rows(&self.partial[..self.shown], self.width);
        let mut out = String::from(ERASE_ROW);
        for _ in 1..rows {
            out.push_str(ERASE_ROW_ABOVE);
        }
        out
    }

    /// The styled unfinished line (no `\n`), now printed (replacing its
    /// unstyled form when it was shown live).
    pub(crate) fn flush(&mut self) -> String {
        if self.partial.is_empty() {
            return String::new();
        }
        let erase = self.erase_shown();
        self.shown = 0;
        let partial = std::mem::take(&mut self.partial);
        erase + &self.line(&partial)
    }

    /// A new message starts: no code block is open.
    pub(crate) fn reset(&mut self) {
        self.partial.clear();
        self.shown = 0;
        self.in_fence = false;
    }

    fn line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            self.in_fence = !self.in_fence;
            return format!("{DIM}{line}{NOT_BOLD}");
        }
        if self.in_fence {
            return format!("{CODE}{line}{NOT_CODE}");
        }
        style_line(line)
    }
}

/// One line of Markdown (outside a fenced block) with ANSI attributes.
fn style_line(line: &str) -> String {
    if line.trim().is_empty() {
        return line.to_owned();
    }
    let indent = &line[..line.len() - line.trim_start().len()];
    let mut out = String::from(indent);
    let mut link: Vec<String> = Vec::new();
    let mut numbers: Vec<Option<u64>> = Vec::new();
    for event in Parser::new_ext(line, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(tag) => match tag {
                Tag::Heading { .. } => out.push_str(&format!("{BOLD}{UNDERLINE}")),
                Tag::Strong => out.push_str(BOLD),
                Tag::Emphasis => out.push_str(ITALIC),
                Tag::Strikethrough => out.push_str(STRIKE),
                Tag::BlockQuote(_) => out.push_str(&format!("{DIM}│{NOT_BOLD} ")),
                Tag::List(start) => numbers.push(start),
                Tag::Item => match numbers.last_mut() {
                    Some(Some(n)) => {
                        out.push_str(&format!("{n}. "));
                        *n += 1;
                    }
                    _ => out.push_str("• "),
                },
                Tag::Link { dest_url, .. } => {
                    out.push_str(UNDERLINE);
                    link.push(inert(&dest_url).into_owned());
                }
                Tag::CodeBlock(_) => out.push_str(CODE),
                _ => {}
            },
            Event::End(tag) => match tag {
                TagEnd::Heading(_) => out.push_str(&format!("{NOT_UNDERLINE}{NOT_BOLD}")),
                TagEnd::Strong => out.push_str(NOT_BOLD),
                TagEnd::Emphasis => out.push_str(NOT_ITALIC),
                TagEnd::Strikethrough => out.push_str(NOT_STRIKE),
                TagEnd::List(_) => {
                    numbers.pop();
                }
                TagEnd::Link => {
                    out.push_str(NOT_UNDERLINE);
                    if let Some(url) = link.pop() {
                        out.push_str(&format!(" {DIM}({url}){NOT_BOLD}"));
                    }
                }
                TagEnd::CodeBlock => out.push_str(NOT_CODE),
                _ => {}
            },
            // Entities (`&#27;`) decode to controls: made inert again.
            Event::Text(t) => out.push_str(&inert(t.trim_end_matches('\n'))),
            Event::Code(t) => out.push_str(&format!("{CODE}{}{NOT_CODE}", inert(&t))),
            Event::Html(t) | Event::InlineHtml(t) => out.push_str(&inert(&t)),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::Rule => out.push_str(&format!("{DIM}────────{NOT_BOLD}")),
            _ => {}
        }
    }
    out
}

/// The rows `text` (one line, no `\n`) covers on a terminal `width` columns
/// wide: wide characters (CJK, most emoji) take two columns, and one that
/// does not fit at the end of a row starts the next.
pub(crate) fn rows(text: &str, width: usize) -> usize {
    let width = width.max(1);
    let (mut rows, mut col) = (1, 0);
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if col + w > width {
            rows += 1;
            col = 0;
        }
        col += w;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_characters_take_two_columns_and_wrap_whole() {
        assert_eq!(rows("", 10), 1);
        assert_eq!(rows("abcdefghij", 10), 1);
        assert_eq!(rows("abcdefghijk", 10), 2);
        // Five CJK characters fill ten columns; a sixth needs a second row.
        assert_eq!(rows("你好你好你", 10), 1);
        assert_eq!(rows("你好你好你好", 10), 2);
        // Nine columns used, a wide character does not fit in the tenth.
        assert_eq!(rows("abcdefghi你", 10), 2);
        assert_eq!(rows("🙂🙂🙂", 4), 2);
    }

    /// The text without ANSI sequences.
    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn lines_are_styled_once_complete() {
        let mut s = Styler::default();
        assert_eq!(s.feed("**Bold** and `co"), "");
        let done = s.feed("de` here\nnext");
        assert_eq!(
            done,
            format!("{BOLD}Bold{NOT_BOLD} and {CODE}code{NOT_CODE} here\n")
        );
        assert_eq!(plain(&s.flush()), "next");
        assert_eq!(s.flush(), "");
    }

    #[test]
    fn markup_becomes_attributes_and_the_words_stay() {
        let cases = [
            ("# Title", "Title"),
            ("- one *two*", "• one two"),
            ("  - nested", "  • nested"),
            ("3. third", "3. third"),
            ("> quoted", "│ quoted"),
            ("see [docs](https://x.dev)", "see docs (https://x.dev)"),
            ("~~old~~ new", "old new"),
            ("a < b & c", "a < b & c"),
            ("snake_case_name stays", "snake_case_name stays"),
        ];
        for (md, want) in cases {
            assert_eq!(plain(&style_line(md)), want, "{md:?}");
        }
    }

    #[test]
    fn fenced_code_is_tracked_across_lines_and_reset_per_message() {
        let mut s = Styler::default();
        let out = s.feed("```rust\nlet x = **1**;\n```\nafter **b**\n");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            format!("{CODE}let x = **1**;{NOT_CODE}"),
            "code is not Markdown"
        );
        assert_eq!(plain(lines[3]), "after b");
        s.feed("```\nunclosed\n");
        s.reset();
        assert_eq!(plain(&s.feed("**x**\n")), "x\n");
    }
}
