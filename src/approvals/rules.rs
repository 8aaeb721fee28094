//! "Always allow" rule patterns: the exact arguments of the approved call, or
//! — for `exec_command`, when the user names one with `/approve <id> always
//! <words>` — a command prefix.
//!
//! Inspecting a command's words cannot make a prefix rule safe for programs
//! with many ways to run other programs, write files or change their own
//! configuration (`git log --output=… --format=…`, `git config
//! core.fsmonitor`, `find -exec`, `tar --to-command`, `make`, `npm`, …). So a
//! prefix covers further arguments only for the short list of read-only
//! programs in [`OPEN_ENDED`] (`ls`, `cat`, `grep`, `df`, …); for every other
//! program the rule must name the whole command and allows exactly that
//! command (`always git status` allows `git status`, not `git status -- x`).
//!
//! Even then only a simple command rides on a rule: anything that could chain,
//! substitute or redirect (`;`, `&`, `|`, `` ` ``, `$`, `<`, `>`, `(`, `)`,
//! newlines) asks again, as does a continuation that quotes, escapes, or
//! passes an option that runs something else or writes a file. Some commands
//! never get a rule at all, not even for their exact arguments: a `config`
//! write, an `--output`/`-o` option, and a `--format`/`--pretty` with `%`
//! escapes always ask ([`always_asks`]).

use crate::visible::visible;
use serde_json::Value;

const PREFIX: &str = "prefix:";
/// The tool whose `command` argument prefix rules apply to.
const COMMAND_TOOL: &str = "exec_command";
const SHELL_CONTROL: &[char] = &[';', '&', '|', '`', '$', '<', '>', '(', ')', '\n', '\r'];
const MIN_PREFIX_CHARS: usize = 2;
/// Read-only programs without options that run other programs or write
/// files: a prefix of one of these may cover further arguments. Anything not
/// listed (`git`, `ssh`, `find`, `tar`, `rsync`, `make`, `npm`, `cargo`,
/// `python`, `sed`, `sort -o`, `rg --pre`, `tree -o`, …) only gets rules for
/// a whole command.
const OPEN_ENDED: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "du",
    "df",
    "free",
    "uptime",
    "pwd",
    "whoami",
    "id",
    "uname",
    "stat",
    "diff",
    "cmp",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "which",
    "ps",
    "echo",
    "nproc",
];
/// Programs that run whatever their arguments say: a rule for one of these,
/// even for a whole command, would be a rule for the command it runs.
const RUNS_ANYTHING: &[&str] = &[
    "sh", "bash", "zsh", "dash", "fish", "ksh", "mksh", "csh", "tcsh", "pwsh", "busybox", "env",
    "sudo", "doas", "su", "xargs", "eval", "exec", "command", "builtin", "time", "nohup",
    "timeout", "nice", "ionice", "stdbuf", "setsid", "chroot", "unshare", "nsenter", "strace",
    "ltrace", "gdb", "watch", "script", "expect", "parallel", "python", "python3", "perl", "ruby",
    "node", "deno", "bun", "php", "lua", "tclsh", "awk", "gawk", "find",
];
/// Characters that quote or escape (hiding what a word is) or expand
/// history (`!`).
const QUOTING: &[char] = &['\'', '"', '\\', '!'];
/// Words in an option that make programs run something else: `--exec`,
/// `-o ProxyCommand=…`, `-c core.pager=…`, `--upload-pack=…`.
const RUNS_SOMETHING_ELSE: &[&str] = &[
    "exec", "command", "config", "pager", "editor", "hook", "pack", "shell", "eval", "filter",
    "askpass", "proxy", "output",
];

/// Whether a stored `pattern` allows a call with these (JSON) `arguments`.
/// Checked at use, not only when the rule was made, so a rule stored under
/// looser checks cannot allow more than these do.
pub fn allows(pattern: &str, arguments: &str) -> bool {
    let command = command_of(arguments);
    if command.as_deref().is_some_and(always_asks) {
        return false;
    }
    match pattern.strip_prefix(PREFIX) {
        Some(prefix) => command.is_some_and(|c| continues(&c, prefix)),
        None => pattern == arguments,
    }
}

/// The pattern for "always allow exactly these arguments"; `Err` is the
/// refusal for the user.
pub fn exact_pattern(arguments: &str) -> Result<String, String> {
    match command_of(arguments) {
        Some(command) if always_asks(&command) => Err(always_asks_refusal()),
        _ => Ok(arguments.to_owned()),
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
    let prefix = normalize(prefix);
    if prefix.chars().count() < MIN_PREFIX_CHARS || prefix.contains(SHELL_CONTROL) {
        return Err("That prefix is too short or contains shell control characters.".to_owned());
    }
    let first = prefix.split(' ').next().unwrap_or_default();
    if RUNS_ANYTHING.contains(&program(&prefix)) {
        return Err(format!(
            "`{first}` can run any command, so a rule for it would allow everything; approve these one at a time."
        ));
    }
    let Some(command) = command_of(arguments) else {
        return Err(format!(
            "The command on this card does not start with `{prefix}`."
        ));
    };
    if always_asks(&command) {
        return Err(always_asks_refusal());
    }
    if continues(&command, &prefix) {
        return Ok(format!("{PREFIX}{prefix}"));
    }
    let command = normalize(&command);
    if command.starts_with(&prefix) && !open_ended(&prefix) {
        return Err(format!(
            "`{first}` has options that run other programs or write files, so a rule for it must name the whole command: `always {command}`."
        ));
    }
    Err(format!(
        "The command on this card does not start with `{prefix}`."
    ))
}

/// How a pattern reads in `/approvals` listings.
pub fn describe(pattern: &str) -> String {
    match pattern.strip_prefix(PREFIX) {
        Some(prefix) => describe_prefix(prefix),
        None => format!("exactly `{}`", visible(pattern).text),
    }
}

pub fn describe_prefix(prefix: &str) -> String {
    let prefix = normalize(prefix);
    // Shown like a card: a rule cannot pass for another either.
    let shown = visible(&prefix).text;
    if open_ended(&prefix) {
        format!("commands starting with `{shown}`")
    } else {
        format!("exactly the command `{shown}`")
    }
}

/// Commands no rule may allow: they write configuration or files, or
/// format output with escapes (how `git log --output=… --format=…` writes a
/// script). Deciding them once is cheap; a standing rule is not.
fn always_asks(command: &str) -> bool {
    if open_ended(command) {
        return false;
    }
    let words: Vec<String> = command
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    words.iter().skip(1).any(|w| {
        w == "config"
            || w == "-o"
            || (w.starts_with("-o") && !w.starts_with("--"))
            || w.starts_with("--output")
            || ((w.starts_with("--format") || w.starts_with("--pretty")) && w.contains('%'))
            || w.starts_with("of=")
    })
}

fn always_asks_refusal() -> String {
    "Commands that write configuration or files (`config`, `--output`, `-o`, formats with `%`) ask every time; allow this one once.".to_owned()
}

/// The program a command or prefix runs: `/usr/bin/git` is `git`.
fn program(command: &str) -> &str {
    let first = command.split_whitespace().next().unwrap_or_default();
    first.rsplit('/').next().unwrap_or(first)
}

fn open_ended(prefix: &str) -> bool {
    OPEN_ENDED.contains(&program(prefix))
}

/// Words joined by single spaces.
fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The command as it will run: newlines and tabs are not spaces to a shell.
fn command_of(arguments: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    args.get("command")?.as_str().map(|c| c.trim().to_owned())
}

/// `command` is `prefix`, or — for an open-ended program — `prefix`
/// followed by a space and a plain continuation, and simple.
fn continues(command: &str, prefix: &str) -> bool {
    if command.contains(SHELL_CONTROL) || command.contains(QUOTING) {
        return false;
    }
    let (command, prefix) = (normalize(command), normalize(prefix));
    match command.strip_prefix(prefix.as_str()) {
        Some("") => true,
        Some(rest) => open_ended(&prefix) && rest.starts_with(' ') && plain_continuation(rest),
        None => false,
    }
}

/// No option that would make the program run something else (`-c`/`-e`
/// alone too: for many programs they take code).
fn plain_continuation(rest: &str) -> bool {
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
    fn open_ended_prefixes_match_simple_continuations_only() {
        let p = prefix_pattern("exec_command", &cmd("ls -la src"), "ls").unwrap();
        assert_eq!(p, "prefix:ls");
        for ok in ["ls", "ls -la", "ls --color=never src", "  ls   docs  "] {
            assert!(allows(&p, &cmd(ok)), "{ok}");
        }
        for refused in [
            "lsof",
            "ls; rm -rf ~",
            "ls && curl evil",
            "ls | sh",
            "ls $(rm -rf ~)",
            "ls `id`",
            "ls > /etc/passwd",
            "ls\nrm -rf ~",
            "ls\rrm -rf ~",
            "echo ls",
            "ls 'quoted'",
            "ls \\-c",
            "ls -c",
            "ls --exec=x",
        ] {
            let refused = refused.replace("\\n", "\n").replace("\\r", "\r");
            assert!(!allows(&p, &cmd(&refused)), "{refused}");
        }
        let grep = prefix_pattern("exec_command", &cmd("grep -rn TODO src"), "grep -rn").unwrap();
        assert!(allows(&grep, &cmd("grep -rn FIXME docs")));
        assert!(!allows(&grep, "not json"));
        assert!(!allows(&grep, &json!({ "path": "grep -rn" }).to_string()));
    }

    /// The attack from issue 23: with `always git`, `git log --output=…
    /// --format=…` wrote a script and `git config core.fsmonitor` ran it.
    #[test]
    fn programs_with_many_execution_paths_get_whole_command_rules_only() {
        let refusal = prefix_pattern("exec_command", &cmd("git status"), "git").unwrap_err();
        assert!(
            refusal.contains("must name the whole command: `always git status`"),
            "{refusal}"
        );
        // A rule stored before these checks allows only the bare program.
        for stored in [
            "prefix:git",
            "prefix:git status",
            "prefix:cargo",
            "prefix:ssh build",
        ] {
            for attack in [
                "git log -1 --output=2 --format=echo%x20pwned%x3b%x20id%x20%x3e%x20OUT",
                "git config core.fsmonitor sh",
                "git status --short",
                "git diff HEAD --output=/abs/path",
                "git -c core.pager=id log",
                "git fetch --upload-pack=/tmp/x origin",
                "cargo test --config build.rustc-wrapper=/tmp/x",
                "cargo run",
                "ssh build -o ProxyCommand=id x",
                "ssh build uptime",
            ] {
                assert!(!allows(stored, &cmd(attack)), "{stored} allowed {attack}");
            }
        }
        let p = prefix_pattern("exec_command", &cmd("git  status"), "git status").unwrap();
        assert_eq!(p, "prefix:git status");
        assert!(allows(&p, &cmd("git status")));
        assert!(allows(&p, &cmd(" git   status ")));
        assert!(!allows(&p, &cmd("git status .")));
        for program in [
            "make", "npm", "tar", "rsync", "sed", "rg", "tree", "sort", "docker",
        ] {
            let c = format!("{program} x");
            assert!(
                prefix_pattern("exec_command", &cmd(&c), program).is_err(),
                "{program}"
            );
            assert!(
                prefix_pattern("exec_command", &cmd(&c), &c).is_ok(),
                "{program}"
            );
        }
        assert_eq!(
            describe("prefix:git status"),
            "exactly the command `git status`"
        );
        assert_eq!(describe("prefix:ls"), "commands starting with `ls`");
    }

    #[test]
    fn config_writes_output_options_and_format_escapes_always_ask() {
        for write in [
            "git config core.fsmonitor sh",
            "git log -1 --output=2 --format=echo%x20pwned",
            "git log --pretty=format:%H%n",
            "git diff HEAD --output=/abs/path",
            "npm config set script-shell /tmp/x",
            "curl -o /tmp/x https://example.com",
            "curl -oout https://example.com",
            "dd if=a of=/etc/passwd",
        ] {
            assert!(exact_pattern(&cmd(write)).is_err(), "{write}");
            assert!(
                prefix_pattern("exec_command", &cmd(write), write).is_err(),
                "{write}"
            );
            assert!(
                !allows(&cmd(write), &cmd(write)),
                "a stored rule for {write}"
            );
        }
        // Read-only programs keep their `-o` and `--format`: nothing to write.
        assert!(exact_pattern(&cmd("ls -o")).is_ok());
        assert!(exact_pattern(&cmd("git log --oneline -5")).is_ok());
        assert!(exact_pattern(&json!({ "path": "config" }).to_string()).is_ok());
    }

    #[test]
    fn prefixes_must_fit_the_card_and_be_plain() {
        let args = cmd("cargo test --workspace");
        assert!(prefix_pattern("exec_command", &args, "cargo test --workspace").is_ok());
        let other = prefix_pattern("exec_command", &args, "npm").unwrap_err();
        assert!(other.contains("does not start with `npm`"), "{other}");
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
    }
}
