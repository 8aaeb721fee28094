//! Property tests of "always" prefix rules (issue 18's fuzzing target; issue
//! 23's critical hole): whatever follows a rule's prefix, a command that
//! could chain, substitute, redirect, quote, or pass an option that runs or
//! writes something never rides on the rule, and a rule for a program with
//! such options allows exactly its own command.

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
