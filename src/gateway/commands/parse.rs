//! Slash commands answered by the gateway itself, before the agent: one enum
//! ([`Builtin`]) that the parser, the skills' reserved names, `/help` and the
//! platforms' command menus are all derived from. What each command does is
//! in its family's file, reached through the table in `dispatch`.

use switchboard_platform::CommandInfo;

/// The gateway's own commands, in the order `/help` and the menus list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Help,
    Stop,
    Clear,
    Memory,
    Plan,
    Identity,
    Checkins,
    Tasks,
    Approvals,
    Approve,
    Usage,
    Model,
    Verbose,
    Voice,
    Queue,
    Whoami,
    Skills,
    Tools,
    Settings,
    /// Telegram's own first command; answered like `/help`.
    Start,
}

impl Builtin {
    pub(crate) const ALL: [Builtin; 20] = [
        Builtin::Help,
        Builtin::Stop,
        Builtin::Clear,
        Builtin::Memory,
        Builtin::Plan,
        Builtin::Identity,
        Builtin::Checkins,
        Builtin::Tasks,
        Builtin::Approvals,
        Builtin::Approve,
        Builtin::Usage,
        Builtin::Model,
        Builtin::Verbose,
        Builtin::Voice,
        Builtin::Queue,
        Builtin::Whoami,
        Builtin::Skills,
        Builtin::Tools,
        Builtin::Settings,
        Builtin::Start,
    ];

    pub(crate) const fn name(self) -> &'static str {
        match self {
            Builtin::Help => "help",
            Builtin::Stop => "stop",
            Builtin::Clear => "clear",
            Builtin::Memory => "memory",
            Builtin::Plan => "plan",
            Builtin::Identity => "identity",
            Builtin::Checkins => "checkins",
            Builtin::Tasks => "tasks",
            Builtin::Approvals => "approvals",
            Builtin::Approve => "approve",
            Builtin::Usage => "usage",
            Builtin::Model => "model",
            Builtin::Verbose => "verbose",
            Builtin::Voice => "voice",
            Builtin::Queue => "queue",
            Builtin::Whoami => "whoami",
            Builtin::Skills => "skills",
            Builtin::Tools => "tools",
            Builtin::Settings => "settings",
            Builtin::Start => "start",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    /// What a platform's command menu says of it; `None` keeps it out of the
    /// menu (`/start` is Telegram's own, `/approve` is typed from a card's text).
    const fn menu(self) -> Option<&'static str> {
        Some(match self {
            Builtin::Help => "What I can do and the commands",
            Builtin::Stop => "Stop the answer in progress",
            Builtin::Clear => "Forget this conversation",
            Builtin::Memory => "What I remember about you",
            Builtin::Plan => "The plan I am working through here",
            Builtin::Identity => "Who I am: name, persona, style",
            Builtin::Checkins => "Opt-in check-ins on open loops",
            Builtin::Tasks => "Background tasks and schedules here",
            Builtin::Approvals => "Waiting cards and your rules",
            Builtin::Usage => "Today's token usage",
            Builtin::Model => "The model in use",
            Builtin::Verbose => "How much of my work you see",
            Builtin::Voice => "Spoken answers: on or off",
            Builtin::Queue => "Messages sent while I answer",
            Builtin::Whoami => "Your ids as the gateway sees them",
            Builtin::Skills => "The skills you can run",
            Builtin::Tools => "The tools I can use",
            Builtin::Settings => "This chat's settings",
            Builtin::Approve | Builtin::Start => return None,
        })
    }

    /// Its line in `/help`: how it is typed, and what it does.
    const fn help(self) -> Option<&'static str> {
        Some(match self {
            Builtin::Help => "/help — this list",
            Builtin::Stop => "/stop — stop the answer in progress (queued messages still get theirs); /stop all also stops this chat's background tasks",
            Builtin::Clear => "/clear — forget this conversation's history, task state, execution state and plan",
            Builtin::Memory => "/memory — what I remember about you; `/memory forget <id>`, `/memory trace <id>`, `/memory pin <id>`",
            Builtin::Plan => "/plan — the plan I am working through in this conversation, step by step",
            Builtin::Identity => "/identity — my name, persona and style rules; where the operator allows, `/identity name|persona|style add|reset` sets them for our direct messages",
            Builtin::Checkins => "/checkins on [HH:MM] [time zone] | off — a short check-in here when I notice an open loop or a risk (off by default, direct messages only)",
            Builtin::Tasks => "/tasks — background tasks and schedules here; `/tasks cancel <id>`",
            Builtin::Approvals => "/approvals — cards waiting here and your \"always allow\" rules; `/approvals revoke <id>`",
            Builtin::Approve => "/approve <id> allow|always|edit|deny [reason] — decide an approval by text",
            Builtin::Usage => "/usage [days] — your tokens, cache hits and estimated cost per model",
            Builtin::Model => "/model [name] — the model in use, and switching this chat's model",
            Builtin::Verbose => "/verbose off|tools|full — how much of my work you see while I answer",
            Builtin::Voice => "/voice on|off|auto — my answers also as voice notes: always, never, or (auto) when you send one",
            Builtin::Queue => "/queue followup|collect|interrupt — what happens to messages you send while I answer",
            Builtin::Whoami => "/whoami — your ids as the gateway sees them",
            Builtin::Skills => "/skills — the skills you can run with `/name <input>`; `/skills install <url>` and `/skills add <idea>` add one (on a card)",
            Builtin::Tools => "/tools — the tools I can use, by source; `/tools add|import|remove …` and `/tools export` for tools added from the chat",
            Builtin::Settings => "/settings — the operator's settings for this chat (approvers, or in a DM)",
            Builtin::Start => return None,
        })
    }
}

/// The gateway's own command names; a skill cannot take these.
pub const COMMANDS: [&str; Builtin::ALL.len()] = {
    let mut names = [""; Builtin::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = Builtin::ALL[i].name();
        i += 1;
    }
    names
};

/// A parsed `/command args`: one of the gateway's own, or another name (a
/// skill's, or unknown).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Command<'a> {
    pub name: String,
    pub builtin: Option<Builtin>,
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
        builtin: Builtin::from_name(&name),
        name,
        args: parts.collect(),
    })
}

/// The command menu: the gateway's commands, then the skills by name.
pub(crate) fn menu(skills: &crate::skills::SkillBook) -> Vec<CommandInfo> {
    Builtin::ALL
        .into_iter()
        .filter_map(|b| Some(CommandInfo::new(b.name(), b.menu()?)))
        .chain(
            skills
                .iter()
                .map(|skill| CommandInfo::new(skill.name.as_str(), skill.description.as_str())),
        )
        .collect()
}

/// The text after `/name` (as typed, line breaks kept): a skill's input.
pub(crate) fn input_after_name(text: &str) -> &str {
    let text = text.trim_start();
    text.find(char::is_whitespace)
        .map_or("", |i| text[i..].trim())
}

/// `/help`: every command's line.
pub(super) fn help() -> String {
    let lines: Vec<&str> = Builtin::ALL.into_iter().filter_map(Builtin::help).collect();
    format!(
        "**Commands**\n{}\nAnything else goes to the agent.",
        lines.join("\n")
    )
}

/// What `/help` adds for the operator at the machine: the console's own keys and words.
pub(super) const CONSOLE_HELP: &str = "\n\n**In this console**\n\
A card takes `y`, `yes`, `allow` or `1` (allow once), `a`, `always` or `2`, \
`e`, `edit` or `3`, and `n`, `no`, `deny` or `4`, in any case.\n\
Ctrl-C stops the answer in progress (like /stop; at a card it denies).\n\
`/attach PATH [caption]` (or a path dropped on a line of its own) sends a file.\n\
At the prompt, Ctrl-C twice, Ctrl-D, /exit or /quit quits.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_with_bot_suffix_and_args() {
        assert_eq!(
            parse("/help"),
            Some(Command {
                name: "help".into(),
                builtin: Some(Builtin::Help),
                args: vec![]
            })
        );
        assert_eq!(
            parse("/Tasks@my_bot cancel ab12cd"),
            Some(Command {
                name: "tasks".into(),
                builtin: Some(Builtin::Tasks),
                args: vec!["cancel", "ab12cd"]
            })
        );
        assert_eq!(parse("/standup notes").unwrap().builtin, None);
        assert_eq!(parse("hello /help"), None);
        assert_eq!(parse("/"), None);
        assert_eq!(parse("/etc/passwd is a file"), None);
    }

    #[test]
    fn help_names_and_menu_come_from_the_one_enum() {
        let text = help();
        for b in Builtin::ALL {
            assert_eq!(Builtin::from_name(b.name()), Some(b));
            assert!(COMMANDS.contains(&b.name()));
            if b != Builtin::Start {
                assert!(text.contains(&format!("/{}", b.name())), "{b:?} in {text}");
            }
        }
        let mut unique = COMMANDS.to_vec();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), COMMANDS.len());
        let menu: Vec<String> = Builtin::ALL
            .into_iter()
            .filter(|b| b.menu().is_some())
            .map(|b| b.name().to_owned())
            .collect();
        assert!(!menu.contains(&"approve".to_owned()) && !menu.contains(&"start".to_owned()));
        assert_eq!(menu.len(), 18);
    }
}
