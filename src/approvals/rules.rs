//! "Always allow" rule patterns: the exact arguments of the approved call, or
//! — for `exec_command`, when the user names one with `/approve <id> always
//! <prefix>` — a command prefix.
//!
//! A prefix rule allows a command that is the prefix or continues it after a
//! space, and only a simple command: anything that could chain, substitute or
//! redirect (`;`, `&`, `|`, `` ` ``, `$`, `<`, `>`, `(`, `)`, newlines) asks
//! again, so `git status` never lets `git status; rm -rf ~` through.

use serde_json::Value;

const PREFIX: &str = "prefix:";
/// The tool whose `command` argument prefix rules apply to.
const COMMAND_TOOL: &str = "exec_command";
const SHELL_CONTROL: &[char] = &[';', '&', '|', '`', '$', '<', '>', '(', ')', '\n', '\r'];
const MIN_PREFIX_CHARS: usize = 2;
/// Programs that run whatever their arguments say: a prefix of one of these
/// alone would allow any command, so it is refused (`git`, `cargo test` are fine).
const RUNS_ANYTHING: &[&str] = &[
    "sh", "bash", "zsh", "dash", "fish", "env", "sudo", "doas", "su", "xargs", "eval", "exec",
    "nohup", "timeout", "nice", "python", "python3", "perl", "ruby", "node", "deno", "php", "lua",
    "awk", "find",
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
    if RUNS_ANYTHING.contains(&first) {
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

/// `command` is `prefix`, or `prefix` followed by a space, and simple.
fn continues(command: &str, prefix: &str) -> bool {
    if command.contains(SHELL_CONTROL) {
        return false;
    }
    match command.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(' '),
        None => false,
    }
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
        ] {
            assert!(!allows(&p, &cmd(refused)), "{refused}");
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
        for anything in ["sh", "bash -c", "env", "python3 -c", "xargs"] {
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
