//! Text the terminal cannot interpret: escape sequences, carriage returns,
//! backspaces, other C0/C1 controls and bidi controls are printed as visible
//! symbols instead of reaching the terminal.
//!
//! Everything the console prints that came from the model, a tool or a user
//! passes through here: `touch X #\r$ echo SAFE` must not print as
//! `$ echo SAFE`, and an OSC 52 sequence must not write the clipboard.

use std::borrow::Cow;

/// `text` with every control character except newline and tab shown as a
/// control picture (`␛`, `␍`, `␈`, …) or as `⟨U+XXXX⟩` (C1 controls, bidi
/// and other invisible format characters).
pub(crate) fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match u32::from(c) {
            _ if !needs_escape(c) => out.push(c),
            // C0 controls have Unicode control pictures at U+2400 + code.
            n @ 0x00..=0x1f => out.push(char::from_u32(0x2400 + n).unwrap_or('�')),
            0x7f => out.push('␡'),
            n => out.push_str(&format!("⟨U+{n:04X}⟩")),
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    matches!(u32::from(c),
        0x00..=0x08 | 0x0b..=0x1f | 0x7f..=0x9f
        // Bidi marks, embeddings, overrides and isolates; zero-width and
        // other invisible format characters; line/paragraph separators.
        | 0x061c | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_print_as_symbols() {
        assert_eq!(inert("touch X #\r$ echo SAFE"), "touch X #␍$ echo SAFE");
        assert_eq!(inert("a\x1b[2K\x1b[1Gb"), "a␛[2K␛[1Gb");
        assert_eq!(inert("\x1b]52;c;cm0gLXJmIH4=\x07"), "␛]52;c;cm0gLXJmIH4=␇");
        assert_eq!(inert("x\x08\x08y\x7f"), "x␈␈y␡");
        assert_eq!(
            inert("\u{9b}31m\u{9d}0;t\u{9c}"),
            "⟨U+009B⟩31m⟨U+009D⟩0;t⟨U+009C⟩"
        );
        assert_eq!(inert("\u{2067}rm\u{2069}"), "⟨U+2067⟩rm⟨U+2069⟩");
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let text = "Hello, wörld — 你好 👋\n\tindented\n";
        assert!(matches!(inert(text), Cow::Borrowed(t) if t == text));
    }
}
