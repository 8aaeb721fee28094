//! Property tests of "always" prefix rules (issue 18's fuzzing target; issue
//! 23's critical hole): whatever follows a rule's prefix, a command that
//! could chain, substitute, redirect, quote, or pass an option that runs or
//! writes something never rides on the rule, and a rule for a program with
//! such options allows exactly its own command; a blank `sh` does not split
//! on, or a control character, anywhere in a command keeps it off every rule.

use super::rules::{allows, prefix_pattern};
use crate::fuzzing::{command_args as args, dangerous};
use proptest::prelude::*;

/// A continuation salted with everything that must make a command ask.
fn continuation() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-z0-9./_-]{1,10}".prop_map(|w| format!(" {w}")),
        prop::sample::select(vec![
            ";",
            "&",
            "|",
            "`",
            "$(id)",
            "<",
            ">",
            "(",
            ")",
            "\n",
            "\r",
            "'",
            "\"",
            "\\",
            "!",
            " --output=/tmp/x",
            " -o",
            " --exec",
            " -c core.pager=sh",
            " --format=%x20",
            " config",
            " --upload-pack=sh",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 1..6).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn nothing_dangerous_rides_on_an_open_ended_prefix(
        program in prop::sample::select(vec!["ls", "cat", "grep", "tail", "echo", "du"]),
        rest in continuation(),
    ) {
        let rule = prefix_pattern("exec_command", &args(program), program);
        prop_assert!(rule.is_ok(), "{rule:?}");
        let Ok(rule) = rule else { unreachable!() };
        let command = format!("{program}{rest}");
        // Trailing blank space is trimmed off a command before it is judged.
        if dangerous(rest.trim_end()) {
            prop_assert!(!allows(&rule, &args(&command)), "{rule} allowed {command:?}");
        }
    }

    #[test]
    fn a_rule_for_git_allows_its_exact_command_only(
        sub in prop::sample::select(vec!["status", "log", "diff", "fetch"]),
        rest in continuation(),
    ) {
        let exact = format!("git {sub}");
        let rule = prefix_pattern("exec_command", &args(&exact), &exact);
        prop_assert!(rule.is_ok(), "{rule:?}");
        let Ok(rule) = rule else { unreachable!() };
        prop_assert!(allows(&rule, &args(&exact)));
        let longer = format!("{exact}{}", rest.trim_end());
        if longer != exact {
            prop_assert!(!allows(&rule, &args(&longer)), "{rule} allowed {longer:?}");
        }
        // A shorter rule for the program is refused outright.
        prop_assert!(prefix_pattern("exec_command", &args(&longer), "git").is_err());
    }
}

/// Blanks and controls `sh` does not split words on (issue 38 item 7).
fn exotic() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(vec![
            '\u{a0}', '\u{b}', '\u{c}', '\u{3000}', '\u{85}', '\u{1680}', '\u{2007}', '\u{202f}',
            '\u{205f}', '\u{2028}', '\u{2029}', '\u{200b}', '\u{feff}', '\r',
        ]),
        (0x2000u32..=0x200a).prop_map(|c| char::from_u32(c).unwrap_or('\u{a0}')),
        (0u32..0x20)
            .prop_filter("not a sh blank", |c| ![9, 10].contains(c))
            .prop_map(|c| char::from_u32(c).unwrap_or('\u{0}')),
        (0x7fu32..=0x9f).prop_map(|c| char::from_u32(c).unwrap_or('\u{7f}')),
    ]
}

proptest! {
    #[test]
    fn an_exotic_blank_anywhere_keeps_a_command_off_every_rule(
        program in prop::sample::select(vec!["ls", "cat", "grep", "tail", "echo", "du"]),
        // Plain operands: options such as `-c` are refused on their own.
        words in prop::collection::vec("[a-z0-9./_][a-z0-9./_-]{0,9}", 0..4),
        blank in exotic(),
        at in 0usize..64,
    ) {
        let rule = prefix_pattern("exec_command", &args(program), program);
        prop_assert!(rule.is_ok(), "{rule:?}");
        let Ok(rule) = rule else { unreachable!() };
        let plain = std::iter::once(program.to_owned()).chain(words).collect::<Vec<_>>().join(" ");
        prop_assert!(allows(&rule, &args(&plain)), "{rule} refused {plain:?}");
        let chars: Vec<char> = plain.chars().collect();
        let at = at % (chars.len() + 1);
        let mut salted: String = chars[..at].iter().collect();
        salted.push(blank);
        salted.extend(&chars[at..]);
        prop_assert!(!allows(&rule, &args(&salted)), "{rule} allowed {salted:?}");
        // Replacing a space with it is the attack of issue 38.
        let swapped = plain.replacen(' ', &blank.to_string(), 1);
        if swapped != plain {
            prop_assert!(!allows(&rule, &args(&swapped)), "{rule} allowed {swapped:?}");
        }
    }
}
