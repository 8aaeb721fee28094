//! Property tests of [`crate::markers::defuse`] (issue 18's fuzzing targets):
//! a gateway marker hidden in any text — any case, any spacing, zero-width or
//! look-alike characters inside — never survives, defusing is idempotent, and
//! text without `<`, `[` or non-ASCII is left byte for byte.

use crate::markers::{defuse, MARKERS};
use proptest::prelude::*;

/// `marker` disguised: random case, and invisible or spacing characters
/// inserted after some of its characters.
fn disguised() -> impl Strategy<Value = String> {
    let marker = prop::sample::select(MARKERS.to_vec());
    let noise = prop::sample::select(vec![
        "", "", "", "\u{200b}", " ", "\u{2060}", "\u{feff}", "_",
    ]);
    (marker, prop::collection::vec((any::<bool>(), noise), 40)).prop_map(|(m, salt)| {
        m.chars()
            .zip(salt.into_iter().cycle())
            .map(|(c, (upper, noise))| {
                let c = if upper {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                };
                format!("{c}{noise}")
            })
            .collect()
    })
}

/// Lower-case text with invisible characters, spaces, `-` and `_` removed —
/// roughly what the matcher compares.
fn folded(text: &str) -> String {
    text.chars()
        .filter(|c| {
            !c.is_whitespace() && !matches!(c, '\u{200b}' | '\u{2060}' | '\u{feff}' | '-' | '_')
        })
        .flat_map(char::to_lowercase)
        .collect()
}

proptest! {
    #[test]
    fn a_disguised_marker_never_survives(
        before in "\\PC{0,30}",
        marker in disguised(),
        after in "\\PC{0,30}",
    ) {
        let text = format!("{before}{marker}{after}");
        let out = defuse(&text);
        for m in MARKERS {
            prop_assert!(!folded(&out).contains(&folded(m)), "{m} survived in {out:?}");
        }
        prop_assert_eq!(defuse(&out), out.clone(), "idempotent");
    }

    #[test]
    fn plain_text_is_left_alone(text in "[a-zA-Z0-9 .,!?\\n]{0,200}") {
        prop_assert_eq!(defuse(&text).into_owned(), text);
    }
}
