//! "Always allow" rule patterns: the exact arguments of the approved call, or
//! — for `exec_command`, when the user names one with `/approve <id> always
//! <prefix>` — a command prefix.
//!
//! A prefix rule allows a command that is the prefix or continues it after a
//! space, and only a simple command: anything that could chain, substitute or
//! redirect (`;`, `&`, `|`, `` ` ``, `$`, `<`, `>`, `(`, `)`, newlines) asks
//! again, so `git status` never lets `git status; rm -rf ~` through. Nor may
//! the continuation quote, escape, or pass an option that makes the program
//! run something else (`git -c core.pager=…`, `find -exec`, `rsync -e`,
//! `ssh -o ProxyCommand=…`): such a command asks again. The check errs on the
//! side of asking (`grep -e` asks too); a rule is a convenience, not a hole.

use serde_json::Value;

const PREFIX: &str = "prefix:";
/// The tool whose `command` argument prefix rules apply to.
const COMMAND_TOOL: &str = "exec_command";
const SHELL_CONTROL: &[char] = &[';', '&', '|', '`', '$', '<', '>', '(', ')', '\n', '\r'];
const MIN_PREFIX_CHARS: usize = 2;
/// Programs that run whatever their arguments say: a prefix of one of these
/// alone would allow any command, so it is refused (`git`, `cargo test` are fine).
const RUNS_ANYTHING: &[&str] = &[
    "sh", "bash", "zsh", "dash", "fish", "ksh", "mksh", "csh", "tcsh", "pwsh", "busybox", "env",
    "sudo", "doas", "su", "xargs", "eval", "exec", "command", "builtin", "time", "nohup",
    "timeout", "nice", "ionice", "stdbuf", "setsid", "chroot", "unshare", "nsenter", "strace",
    "ltrace", "gdb", "watch", "script", "expect", "parallel", "python", "python3", "perl", "ruby",
    "node", "deno", "bun", "php", "lua", "tclsh", "awk", "gawk", "find",
];
/// Continuation characters that quote or escape (hiding what a word is) or
/// expand history (`!`).
const QUOTING: &[char] = &['\'', '"', '\\', '!'];
/// Words in an option of the continuation that make programs run something
/// else: `--exec`, `-o ProxyCommand=…`, `-c core.pager=…`, `--upload-pack=…`.
const RUNS_SOMETHING_ELSE: &[&str] = &[
    "exec", "command", "config", "pager", "editor", "hook", "pack", "shell", "eval", "filter",
    "askpass", "proxy",
];

/// Whether a stored `pattern` allows a call with these (JSON) `arguments`.
pub fn allows(pattern: &str, arguments: &str) -> bool {
    match pattern.strip_prefix(PREFIX) {
        Some(prefix) => command_of(arguments).is_some_and(|c| continues(&c, prefix)),
        None => pattern == arguments,
    }
}

/// The pattern for "always allow commands starting with `prefix`", checked
/// against the card's own arguments; `Err` is the refusal for the user.
pub fn prefix_pattern(tool: &str, arguments: &str, prefix: &str) -> Result<String, String> {
    if tool != COMMAND_TOOL {
        return Err(format!(
            "A prefix rule is only possible for `{COMMAND_TOOL}`; use `always` alone to allow exactly these arguments."
        ));
    }
    let prefix = prefix.trim();
    if prefix.chars().count() < MIN_PREFIX_CHARS || prefix.contains(SHELL_CONTROL) {
        return Err("That prefix is too short or contains shell control characters.".to_owned());
    }
    let first = prefix.split_whitespace().next().unwrap_or_default();
    // `/bin/sh` is `sh`.
    let program = first.rsplit('/').next().unwrap_or(first);
    if RUNS_ANYTHING.contains(&program) {
        return Err(format!(
            "`{first}` can run any command, so a rule for it would allow everything; approve these one at a time."
        ));
    }
    match command_of(arguments) {
        Some(command) if continues(&command, prefix) => Ok(format!("{PREFIX}{prefix}")),
        _ => Err(format!(
            "The command on this card does not start with `{prefix}`."
        )),
    }
}

/// How a pattern reads in `/approvals` listings.
pub fn describe(pattern: &str) -> String {
    match pattern.strip_prefix(PREFIX) {
        Some(prefix) => describe_prefix(prefix),
        None => format!("exactly `{pattern}`"),
    }
}

pub fn describe_prefix(prefix: &str) -> String {
    format!("commands starting with `{}`", prefix.trim())
}

fn command_of(arguments: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    args.get("command")?.as_str().map(|c| c.trim().to_owned())
}

/// `command` is `prefix`, or `prefix` followed by a space and a plain
/// continuation, and simple.
fn continues(command: &str, prefix: &str) -> bool {
    if command.contains(SHELL_CONTROL) {
        return false;
    }
    match command.strip_prefix(prefix) {
        Some("") => true,
        Some(rest) => rest.starts_with(' ') && plain_continuation(rest),
        None => false,
    }
}

/// No quoting, no escapes, and no option that would make the program run
/// something else (`-c`/`-e` alone too: for many programs they take code).
fn plain_continuation(rest: &str) -> bool {
    if rest.contains(QUOTING) {
        return false;
    }
    rest.split_whitespace().all(|word| {
        let lower = word.to_ascii_lowercase();
        // `-c`, also glued to its value (`-ccore.pager=…`), and `-e`.
        if lower.starts_with("-c") || lower == "-e" {
            return false;
        }
        // Options, and `key=value` words (`core.pager=id`, `ProxyCommand=id`).
        let option_like = lower.starts_with('-') || lower.contains('=');
        let runs_something_else = RUNS_SOMETHING_ELSE.iter().any(|w| lower.contains(w));
        !(option_like && runs_something_else)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cmd(c: &str) -> String {
        json!({ "command": c }).to_string()
    }

    #[test]
    fn exact_patterns_match_only_the_same_arguments() {
        assert!(allows(&cmd("ls"), &cmd("ls")));
        assert!(!allows(&cmd("ls"), &cmd("ls -la")));
    }

    #[test]
    fn prefix_patterns_match_simple_continuations_only() {
        let p = prefix_pattern("exec_command", &cmd("git status"), "git").unwrap();
        assert_eq!(p, "prefix:git");
        for ok in ["git", "git status", "git log --oneline -5", "  git diff  "] {
            assert!(allows(&p, &cmd(ok)), "{ok}");
        }
        for refused in [
            "gitk",
            "git status; rm -rf ~",
            "git log && curl evil",
            "git log | sh",
            "git $(rm -rf ~)",
            "git `id`",
            "git log > /etc/passwd",
            "git status\nrm -rf ~",
            "echo git",
            "git -c core.pager=id log",
            "git -ccore.pager=id log",
            "git -c alias.x=!id x",
            "git --config-env=core.pager=X log",
            "git log --exec-path=/tmp",
            "git fetch --upload-pack=/tmp/x origin",
            "git log 'quoted'",
            "git log \\-c",
        ] {
            assert!(!allows(&p, &cmd(refused)), "{refused}");
        }
        let ssh = prefix_pattern("exec_command", &cmd("ssh build uptime"), "ssh build").unwrap();
        assert!(allows(&ssh, &cmd("ssh build df -h")));
        assert!(!allows(&ssh, &cmd("ssh build -o ProxyCommand=id x")));
        let cargo = prefix_pattern("exec_command", &cmd("cargo test"), "cargo").unwrap();
        for ok in [
            "cargo test --workspace",
            "cargo build --release -p x",
            "cargo tree -e normal",
        ] {
            let allowed = allows(&cargo, &cmd(ok));
            assert_eq!(allowed, !ok.contains(" -e "), "{ok}");
        }
        assert!(!allows(&p, "not json"));
        assert!(!allows(&p, &json!({ "path": "git" }).to_string()));
    }

    #[test]
    fn prefixes_must_fit_the_card_and_be_plain() {
        let args = cmd("cargo test --workspace");
        assert!(prefix_pattern("exec_command", &args, "cargo test").is_ok());
        assert!(prefix_pattern("exec_command", &args, "npm").is_err());
        assert!(prefix_pattern("exec_command", &args, "c").is_err());
        assert!(prefix_pattern("exec_command", &args, "cargo;").is_err());
        assert!(prefix_pattern("write_file", &args, "cargo").is_err());
        for anything in [
            "sh",
            "bash -c",
            "env",
            "python3 -c",
            "xargs",
            "/bin/sh",
            "/usr/bin/env",
            "busybox",
            "command",
            "time",
        ] {
            let args = cmd(&format!("{anything} x"));
            assert!(
                prefix_pattern("exec_command", &args, anything).is_err(),
                "{anything}"
            );
        }
        assert_eq!(
            describe("prefix:cargo test"),
            "commands starting with `cargo test`"
        );
    }
}
