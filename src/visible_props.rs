//! Property tests of what an approval card shows (issue 18: "a hidden part is
//! impossible"): whatever a command holds — bidi controls, zero-width and tag
//! characters, ANSI escapes, carriage returns, look-alike letters — nothing
//! that can hide, reorder or rewrite text reaches the card, and a plain
//! command is shown exactly.

use crate::visible::visible_command;
use proptest::prelude::*;

/// Characters a card must never carry raw.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(u32::from(c),
            0x00AD | 0x061C | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F
            | 0xFEFF | 0xFFF9..=0xFFFB | 0xE0000..=0xE007F)
}

fn hostile_command() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z0-9 ./;|&$-]{0,12}",
        Just("\u{202E}".to_owned()),
        Just("\u{2066}".to_owned()),
        Just("\u{2069}".to_owned()),
        Just("\u{200B}".to_owned()),
        Just("\u{FEFF}".to_owned()),
        Just("\u{E0041}".to_owned()),
        Just("\u{1b}[2K".to_owned()),
        Just("\r".to_owned()),
        Just("\n".to_owned()),
        Just("\u{0430}".to_owned()), // Cyrillic а
        Just("\u{FF41}".to_owned()), // full-width ａ
        Just("\u{2212}".to_owned()), // minus sign for `-`
        "\\PC{0,3}",
    ];
    prop::collection::vec(piece, 0..20).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn nothing_hidden_reaches_a_command_card(command in hostile_command()) {
        let shown = visible_command(&command);
        prop_assert!(!shown.text.chars().any(hidden), "{:?} → {:?}", command, shown.text);
        for lookalike in ['\u{0430}', '\u{FF41}', '\u{2212}'] {
            prop_assert!(!shown.text.contains(lookalike), "{:?} → {:?}", command, shown.text);
        }
        let escapes = command.chars().filter(|c| hidden(*c)).count();
        prop_assert!(shown.escaped >= escapes, "every hidden character is counted");
    }

    #[test]
    fn a_plain_command_is_shown_exactly(command in "[a-zA-Z0-9 ./;|&$'\"=-]{0,120}") {
        let shown = visible_command(&command);
        // Only long blank runs are collapsed (and said so).
        if shown.collapsed == 0 {
            prop_assert_eq!(shown.text, command);
            prop_assert_eq!(shown.escaped, 0);
        }
    }
}
