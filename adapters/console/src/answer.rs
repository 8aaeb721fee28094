//! Reading a typed line as the answer to an open card: its one-key shortcut,
//! the button's number, or a word (`yes`, `allow`, `always`, `edit`, `no`,
//! `deny`, the button's label), in any case.

use switchboard_platform::Button;

/// Words that mean a shortcut key on approval-style cards.
const WORDS: &[(&str, char)] = &[
    ("yes", 'y'),
    ("allow", 'y'),
    ("once", 'y'),
    ("allow once", 'y'),
    ("always", 'a'),
    ("edit", 'e'),
    ("no", 'n'),
    ("deny", 'n'),
];

/// The button of `buttons` that `line` answers, if any.
pub(crate) fn chosen<'a>(buttons: &'a [Button], line: &str) -> Option<&'a Button> {
    let typed = line
        .trim()
        .trim_end_matches(['.', '!'])
        .trim()
        .to_lowercase();
    if typed.is_empty() {
        return None;
    }
    if let Ok(n) = typed.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| buttons.get(i));
    }
    let mut chars = typed.chars();
    if let (Some(key), None) = (chars.next(), chars.next()) {
        return buttons.iter().find(|b| b.shortcut == Some(key));
    }
    let typed = typed.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(b) = buttons.iter().find(|b| label_words(&b.label) == typed) {
        return Some(b);
    }
    let key = WORDS.iter().find(|(w, _)| *w == typed).map(|(_, k)| *k)?;
    buttons.iter().find(|b| b.shortcut == Some(key))
}

/// What to type at `buttons`, for the line printed when a line answered nothing.
pub(crate) fn help(buttons: &[Button]) -> String {
    let choices: Vec<String> = buttons
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut ways: Vec<String> = b.shortcut.map(|k| k.to_string()).into_iter().collect();
            if let Some(k) = b.shortcut {
                ways.extend(
                    WORDS
                        .iter()
                        .filter(|(w, c)| *c == k && !w.contains(' '))
                        .map(|(w, _)| (*w).to_owned()),
                );
            }
            ways.push((i + 1).to_string());
            format!("{} ({})", ways.join("/"), label_words(&b.label))
        })
        .collect();
    format!(
        "The card is waiting for an answer: {}. Ctrl-C or /stop denies it.",
        choices.join(", ")
    )
}

/// A label as words: emoji and punctuation dropped, lower case.
fn label_words(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ActionId, ButtonStyle};

    fn card() -> Vec<Button> {
        [
            ('y', "✅ Allow once"),
            ('a', "♾️ Always"),
            ('e', "✏️ Edit"),
            ('n', "⛔ Deny"),
        ]
        .into_iter()
        .map(|(k, label)| Button {
            label: label.into(),
            action: ActionId::parse(&format!("ap:1:{k}")).unwrap(),
            style: ButtonStyle::Primary,
            shortcut: Some(k),
        })
        .collect()
    }

    fn key(line: &str) -> Option<char> {
        chosen(&card(), line).and_then(|b| b.shortcut)
    }

    #[test]
    fn letters_words_labels_and_numbers_answer_in_any_case() {
        for (line, want) in [
            ("y", 'y'),
            ("Y", 'y'),
            ("yes", 'y'),
            (" YES ", 'y'),
            ("Yes.", 'y'),
            ("allow", 'y'),
            ("Allow once", 'y'),
            ("1", 'y'),
            ("a", 'a'),
            ("ALWAYS", 'a'),
            ("2", 'a'),
            ("edit", 'e'),
            ("3", 'e'),
            ("n", 'n'),
            ("No", 'n'),
            ("deny!", 'n'),
            ("4", 'n'),
        ] {
            assert_eq!(key(line), Some(want), "{line:?}");
        }
    }

    #[test]
    fn anything_else_answers_nothing() {
        for line in ["", "ok", "0", "5", "yes please", "x", "/help", "-1", "yess"] {
            assert_eq!(key(line), None, "{line:?}");
        }
    }

    #[test]
    fn the_help_names_every_way_to_answer() {
        let help = help(&card());
        assert!(help.contains("y/yes/allow/once/1 (allow once)"), "{help}");
        assert!(help.contains("n/no/deny/4 (deny)"), "{help}");
    }
}
