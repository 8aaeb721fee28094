//! Slash commands answered by the gateway itself, before the agent.

use super::Inner;
use crate::store::{SessionId, SessionKey, StoreError};
use switchboard_platform::{CommandInfo, User};

/// A parsed `/command args`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Command<'a> {
    pub name: String,
    pub args: Vec<&'a str>,
}

/// Parses `/name@bot arg1 arg2`; `None` when the text is not a command.
pub(crate) fn parse(text: &str) -> Option<Command<'_>> {
    let rest = text.trim_start().strip_prefix('/')?;
    let mut parts = rest.split_whitespace();
    let head = parts.next()?;
    let name = head.split('@').next().unwrap_or(head).to_ascii_lowercase();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    Some(Command {
        name,
        args: parts.collect(),
    })
}

/// The gateway's own commands; a skill cannot take these names.
pub const COMMANDS: &[&str] = &[
    "help",
    "start",
    "clear",
    "usage",
    "whoami",
    "model",
    "tasks",
    "approvals",
    "approve",
    "memory",
    "skills",
    "stop",
];

/// The gateway's commands as a platform's command menu lists them (`/start`
/// is Telegram's own, `/approve` is typed from a card's text).
const MENU: &[(&str, &str)] = &[
    ("help", "What I can do and the commands"),
    ("stop", "Stop the answer in progress"),
    ("clear", "Forget this conversation"),
    ("memory", "What I remember about you"),
    ("tasks", "Background tasks and schedules here"),
    ("approvals", "Waiting cards and your rules"),
    ("usage", "Today's token usage"),
    ("model", "The model in use"),
    ("whoami", "Your ids as the gateway sees them"),
    ("skills", "The skills you can run"),
];

/// The command menu: the gateway's commands, then the skills by name.
pub(crate) fn menu(skills: &crate::skills::SkillBook) -> Vec<CommandInfo> {
    MENU.iter()
        .map(|(name, description)| CommandInfo::new(*name, *description))
        .chain(
            skills
                .iter()
                .map(|skill| CommandInfo::new(skill.name.as_str(), skill.description.as_str())),
        )
        .collect()
}

/// Whether `/name` is one of the gateway's own commands.
pub(crate) fn is_builtin(name: &str) -> bool {
    COMMANDS.contains(&name)
}

/// The text after `/name` (as typed, line breaks kept): a skill's input.
pub(crate) fn input_after_name(text: &str) -> &str {
    let text = text.trim_start();
    text.find(char::is_whitespace)
        .map_or("", |i| text[i..].trim())
}

const HELP: &str = "**Commands**\n\
/help — this list\n\
/stop — stop the answer in progress (queued messages still get theirs)\n\
/clear — forget this conversation's history, task state and execution state\n\
/memory — what I remember about you; `/memory forget <id>`, `/memory trace <id>`\n\
/usage — today's token usage\n\
/whoami — your ids as the gateway sees them\n\
/model — the model in use\n\
/tasks — background tasks and schedules here; `/tasks cancel <id>`\n\
/approvals — cards waiting here and your \"always allow\" rules; `/approvals revoke <id>`\n\
/approve <id> allow|always|edit|deny [reason] — decide an approval by text\n\
/skills — the skills you can run with `/name <input>`\n\
Anything else goes to the agent.";

/// What `/help` adds in `switchboard chat`: the console's own keys and words.
const CONSOLE_HELP: &str = "\n\n**In this console**\n\
A card takes `y`, `yes`, `allow` or `1` (allow once), `a`, `always` or `2`, \
`e`, `edit` or `3`, and `n`, `no`, `deny` or `4`, in any case.\n\
Ctrl-C stops the answer in progress (like /stop; at a card it denies).\n\
At the prompt, Ctrl-C twice, Ctrl-D, /exit or /quit quits.";

/// Runs a command for a session and returns the reply.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
    session: &SessionId,
    user: &User,
    private: bool,
) -> Result<String, StoreError> {
    let store = &inner.store;
    Ok(match cmd.name.as_str() {
        "help" | "start" if inner.local_operator(key.platform) => format!("{HELP}{CONSOLE_HELP}"),
        "help" | "start" => HELP.to_owned(),
        "clear" => {
            let n = store.clear_history(session).await?;
            store.set_waiting_question(key, None).await?;
            store.clear_session_state(session).await?;
            format!(
                "Cleared this conversation ({n} messages), its task state and execution state. \
                 Long-term memories (/memory), settings and rules are unchanged."
            )
        }
        "usage" => {
            let (turns, u) = store.usage_today(key.platform, key.user).await?;
            format!(
                "Today: {turns} turns · {} input tokens ({} from cache) · {} output tokens.",
                u.input_tokens, u.cache_read_tokens, u.output_tokens
            )
        }
        "whoami" => format!(
            "You are {} (user id {}) on {}. Chat {}{}. Approver: {}.",
            user.display_name,
            user.id,
            key.platform,
            key.chat,
            key.thread
                .map(|t| format!(", thread {t}"))
                .unwrap_or_default(),
            if user.is_approver { "yes" } else { "no" }
        ),
        "model" => {
            let provider = inner.agent.provider();
            let m = provider.model();
            let route = provider
                .route()
                .map(|r| format!("\n{r}."))
                .unwrap_or_default();
            format!(
                "Model: `{}` · context window {} tokens.{route}",
                m.name, m.context_window
            )
        }
        "tasks" => super::tasks_cmd::run(inner, cmd, session).await?,
        "approvals" => super::approvals_cmd::run(inner, cmd, key).await?,
        "memory" => super::memory_cmd::run(inner, cmd, key, private).await?,
        "skills" => {
            let skills = inner.skills.book();
            if skills.is_empty() {
                "No skills are installed.".into()
            } else {
                format!(
                    "**Skills** (run one with `/name <input>`)\n{}",
                    skills.listing("/")
                )
            }
        }
        // Handled before the queue; reaching here it found nothing running.
        "stop" => super::stop::NOTHING_TO_STOP.to_owned(),
        other => format!("Unknown command /{other}. Try /help."),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_with_bot_suffix_and_args() {
        assert_eq!(
            parse("/help"),
            Some(Command {
                name: "help".into(),
                args: vec![]
            })
        );
        assert_eq!(
            parse("/Tasks@my_bot cancel ab12cd"),
            Some(Command {
                name: "tasks".into(),
                args: vec!["cancel", "ab12cd"]
            })
        );
        assert_eq!(parse("hello /help"), None);
        assert_eq!(parse("/"), None);
        assert_eq!(parse("/etc/passwd is a file"), None);
    }
}
