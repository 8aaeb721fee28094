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
//!
//! Words are split as `sh` splits them — on space, tab and newline only — and
//! a command holding any other blank (no-break space, U+3000, vertical tab,
//! form feed, U+0085, …), a control or an invisible character never rides on
//! a rule: to `sh`, `ls\u{a0}/../bin/x` is one word, not `ls` and a path.
//!
//! A prefix rule is made for the way the card's command ran: an "always"
//! given to a foreground run (at most the foreground timeout) does not cover
//! the same command run with `background: true` (an hour), nor the other way.

use crate::visible::visible;
use serde_json::Value;

const PREFIX: &str = "prefix:";
/// A prefix rule for commands run with `background: true`.
const BACKGROUND_PREFIX: &str = "background-prefix:";
/// The blanks `sh` splits words on (a newline also ends the command, so a
/// command holding one is refused with the shell controls).
const SH_BLANKS: &[char] = &[' ', '\t', '\n'];
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
    if command
        .as_deref()
        .is_some_and(|c| always_asks(c) || !sh_plain(c))
    {
        return false;
    }
    match split_pattern(pattern) {
        Some((prefix, background)) => {
            background == in_background(arguments) && command.is_some_and(|c| continues(&c, prefix))
        }
        None => pattern == arguments,
    }
}

/// A prefix pattern's prefix, and whether it is for background runs.
fn split_pattern(pattern: &str) -> Option<(&str, bool)> {
    match pattern.strip_prefix(PREFIX) {
        Some(prefix) => Some((prefix, false)),
        None => pattern.strip_prefix(BACKGROUND_PREFIX).map(|p| (p, true)),
    }
}

/// Whether the call runs as a background task (`background: true`).
fn in_background(arguments: &str) -> bool {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|args| args.get("background").and_then(Value::as_bool))
        == Some(true)
}

/// Whether `sh` reads `text` as it looks: no blank but space, tab and
/// newline, no control character, nothing invisible.
fn sh_plain(text: &str) -> bool {
    text.chars().all(|c| {
        SH_BLANKS.contains(&c)
            || !(c.is_whitespace() || c.is_control() || crate::visible::hidden(c))
    })
}

/// The words `sh` sees (before quoting, which no rule lets through).
fn sh_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(SH_BLANKS).filter(|w| !w.is_empty())
}

fn hidden_refusal() -> String {
    "This command holds blanks or characters a shell does not split on as they look (shown as ⟨U+…⟩ on the card); allow it once.".to_owned()
}

/// The pattern for "always allow exactly these arguments"; `Err` is the
/// refusal for the user.
pub fn exact_pattern(arguments: &str) -> Result<String, String> {
    match command_of(arguments) {
        Some(command) if always_asks(&command) => Err(always_asks_refusal()),
        Some(command) if !sh_plain(&command) => Err(hidden_refusal()),
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
    if !sh_plain(prefix) {
        return Err(hidden_refusal());
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
    if !sh_plain(&command) {
        return Err(hidden_refusal());
    }
    if continues(&command, &prefix) {
        let kind = if in_background(arguments) {
            BACKGROUND_PREFIX
        } else {
            PREFIX
        };
        return Ok(format!("{kind}{prefix}"));
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
    match split_pattern(pattern) {
        Some((prefix, false)) => describe_prefix(prefix),
        Some((prefix, true)) => format!("{}, run in the background", describe_prefix(prefix)),
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
    let words: Vec<String> = sh_words(command).map(str::to_ascii_lowercase).collect();
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
    let first = sh_words(command).next().unwrap_or_default();
    first.rsplit('/').next().unwrap_or(first)
}

fn open_ended(prefix: &str) -> bool {
    OPEN_ENDED.contains(&program(prefix))
}

/// Words (as `sh` splits them) joined by single spaces.
fn normalize(text: &str) -> String {
    sh_words(text).collect::<Vec<_>>().join(" ")
}

/// The command as it will run, without the blanks `sh` ignores around it
/// (only those: a leading no-break space is part of the first word).
fn command_of(arguments: &str) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    args.get("command")?
        .as_str()
        .map(|c| c.trim_matches(SH_BLANKS).to_owned())
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
    sh_words(rest).all(|word| {
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

    /// Issue 38 item 7: with `always ls`, `ls\u{a0}/../../usr/bin/touch X`
    /// ran with no card — to `sh` the first word is `ls\u{a0}/../../usr/bin/touch`.
    #[test]
    fn only_the_blanks_sh_splits_on_separate_words() {
        let rule = prefix_pattern("exec_command", &cmd("ls -la"), "ls").unwrap();
        let cat = prefix_pattern("exec_command", &cmd("cat a"), "cat").unwrap();
        for blank in [
            '\u{a0}', '\u{b}', '\u{c}', '\u{3000}', '\u{85}', '\u{2003}', '\u{1680}', '\u{2028}',
            '\u{200b}', '\u{feff}', '\u{1b}', '\u{7f}', '\u{0}',
        ] {
            for (rule, program) in [(&rule, "ls"), (&cat, "cat")] {
                let attack = format!("{program}{blank}/../../usr/bin/touch X");
                assert!(!allows(rule, &cmd(&attack)), "{rule} allowed {attack:?}");
                let inside = format!("{program} a{blank}b");
                assert!(!allows(rule, &cmd(&inside)), "{rule} allowed {inside:?}");
                let leading = format!("{blank}{program}");
                assert!(!allows(rule, &cmd(&leading)), "{rule} allowed {leading:?}");
            }
            let command = format!("ls{blank}x");
            assert!(prefix_pattern("exec_command", &cmd(&command), "ls").is_err());
            assert!(exact_pattern(&cmd(&command)).is_err(), "{command:?}");
            assert!(!allows(&cmd(&command), &cmd(&command)), "{command:?}");
        }
        // Tabs are blanks to `sh` as well.
        assert!(allows(&rule, &cmd("ls\t-la\tsrc")));
    }

    /// Issue 38 item 9: an "always" given to a foreground run allowed the same
    /// command as an hour-long background task.
    #[test]
    fn a_background_run_needs_its_own_rule() {
        let fg = prefix_pattern("exec_command", &cmd("ls -la"), "ls").unwrap();
        let bg_args = json!({ "command": "ls -la", "background": true }).to_string();
        assert!(allows(&fg, &cmd("ls src")));
        assert!(!allows(&fg, &bg_args));
        let bg = prefix_pattern("exec_command", &bg_args, "ls").unwrap();
        assert_ne!(fg, bg);
        assert!(allows(&bg, &bg_args));
        assert!(!allows(&bg, &cmd("ls -la")));
        let off = json!({ "command": "ls", "background": false }).to_string();
        assert!(allows(&fg, &off) && !allows(&bg, &off));
        assert_eq!(
            describe(&bg),
            "commands starting with `ls`, run in the background"
        );
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
