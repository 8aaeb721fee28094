//! Per-chat agent settings (`CHATS_FILE`): the operator binds a chat, a
//! Telegram topic or a Discord channel/thread to a model, instructions,
//! tools, sub-agent roles, free response, verbosity, queue mode and memory.
//! Unbound chats use the defaults. A topic's (thread's) own entry wins over
//! its chat's.
//!
//! ```json
//! {"chats": {
//!   "telegram:-1001234567890": {"tools": {"deny": ["exec_command"]}, "free_response": true},
//!   "telegram:-1001234567890/42": {"model": "gpt-4o", "system_prompt": "You help the coding team.",
//!                                  "tools": {"allow": ["read_file", "exec_command", "mcp_github_*"]}},
//!   "discord:123456789012345678": {"verbosity": "full", "queue": "collect", "memory": false}
//! }}
//! ```

use crate::domain::{QueueMode, Verbosity};
use crate::tools::ToolPolicy;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use switchboard_platform::{ChatAddress, ChatId, Platform, ThreadId};

/// Longest `system_prompt` kept (characters).
const MAX_PROMPT: usize = 8_000;

/// One chat's settings; `None` fields use the defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatSettings {
    /// The entry's key as written (`telegram:-100…/42`), for `/settings`.
    pub target: String,
    pub model: Option<String>,
    /// Added to the system prompt in this chat.
    pub system_prompt: Option<String>,
    pub tools: Arc<ToolPolicy>,
    /// Sub-agent roles offered here (none: the operator's `SUBAGENTS`).
    pub subagents: Option<Vec<String>>,
    /// Answer every message in a group, not only mentions and replies.
    pub free_response: bool,
    pub verbosity: Option<Verbosity>,
    pub queue: Option<QueueMode>,
    /// Long-term memories recalled here (false: none in this chat).
    pub memory: Option<bool>,
}

impl ChatSettings {
    /// The tool policy with the sub-agent roles folded in: a role not
    /// listed in `subagents`, or one with a tool this chat does not allow
    /// (a sub-agent must not reach what the chat denies), is denied as
    /// `delegate_to_<role>`.
    fn fold_subagents(&mut self, all_roles: &[(&str, Vec<&str>)]) {
        let mut policy = (*self.tools).clone();
        for (role, tools) in all_roles {
            let unlisted = self
                .subagents
                .as_ref()
                .is_some_and(|listed| !listed.iter().any(|k| k == role));
            let reaches_denied = tools.iter().any(|t| !self.tools.allows(t));
            if unlisted || reaches_denied {
                policy.deny.insert(format!("delegate_to_{role}"));
            }
        }
        self.tools = Arc::new(policy);
    }
}

/// A bad entry of the file, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatProblem {
    pub target: String,
    pub problem: String,
}

/// Every bound chat.
#[derive(Debug, Clone, Default)]
pub struct ChatBindings {
    by_chat: HashMap<(Platform, ChatId, Option<ThreadId>), ChatSettings>,
}

impl ChatBindings {
    /// The settings for `chat`: its thread's (topic's) entry, else its
    /// chat's. Where a thread is a chat of its own (Discord; `parent` is the
    /// channel it was opened in), then the channel's entry for the thread
    /// (`discord:<channel>/<thread>`), else the channel's.
    pub fn get(&self, chat: &ChatAddress, parent: Option<ChatId>) -> Option<&ChatSettings> {
        let key = |id: ChatId, thread| (chat.platform, id, thread);
        chat.thread
            .and_then(|t| self.by_chat.get(&key(chat.chat, Some(t))))
            .or_else(|| self.by_chat.get(&key(chat.chat, None)))
            .or_else(|| {
                let parent = parent?;
                self.by_chat
                    .get(&key(parent, Some(ThreadId(chat.chat.0))))
                    .or_else(|| self.by_chat.get(&key(parent, None)))
            })
    }

    pub fn len(&self) -> usize {
        self.by_chat.len()
    }

    /// Every entry (in no order), e.g. to compare two versions of the file.
    pub fn entries(&self) -> impl Iterator<Item = &ChatSettings> {
        self.by_chat.values()
    }

    pub fn is_empty(&self) -> bool {
        self.by_chat.is_empty()
    }
}

/// Loads `path`: the usable entries, and the problems (an unreadable file is
/// one problem; a bad entry is skipped by name; an unknown field is named
/// and the entry still loads).
/// `roles`: every sub-agent role by name, with its tools.
pub fn load(path: &Path, roles: &[(&str, Vec<&str>)]) -> (ChatBindings, Vec<ChatProblem>) {
    let mut problems = Vec::new();
    let problem = |target: &str, text: String| ChatProblem {
        target: target.to_owned(),
        problem: text,
    };
    let parsed = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|text| {
            serde_json::from_str::<Value>(&text).map_err(|e| format!("not JSON: {e}"))
        });
    let root = match parsed {
        Ok(v) => v,
        Err(e) => return (ChatBindings::default(), vec![problem("(file)", e)]),
    };
    let Some(chats) = root.get("chats").and_then(Value::as_object) else {
        return (
            ChatBindings::default(),
            vec![problem(
                "(file)",
                "expected {\"chats\": {\"telegram:<chat_id>\": {...}}}".into(),
            )],
        );
    };
    let mut bindings = ChatBindings::default();
    for (target, entry) in chats {
        let Some(address) = parse_target(target) else {
            problems.push(problem(
                target,
                "not platform:chat_id or platform:chat_id/thread_id".into(),
            ));
            continue;
        };
        let Some(fields) = entry.as_object() else {
            problems.push(problem(target, "the entry is not an object".into()));
            continue;
        };
        match settings(target, fields, &mut problems) {
            Ok(mut s) => {
                s.fold_subagents(roles);
                bindings.by_chat.insert(address, s);
            }
            Err(e) => problems.push(problem(target, e)),
        }
    }
    (bindings, problems)
}

fn parse_target(raw: &str) -> Option<(Platform, ChatId, Option<ThreadId>)> {
    let (platform, rest) = raw.split_once(':')?;
    let platform = Platform::parse(platform.trim())?;
    let (chat, thread) = match rest.split_once('/') {
        Some((c, t)) => (c, Some(ThreadId(t.trim().parse().ok()?))),
        None => (rest, None),
    };
    Some((platform, ChatId(chat.trim().parse().ok()?), thread))
}

const FIELDS: &[&str] = &[
    "model",
    "system_prompt",
    "tools",
    "subagents",
    "free_response",
    "verbosity",
    "queue",
    "memory",
];

fn settings(
    target: &str,
    f: &Map<String, Value>,
    problems: &mut Vec<ChatProblem>,
) -> Result<ChatSettings, String> {
    for key in f.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        problems.push(ChatProblem {
            target: target.to_owned(),
            problem: format!("unknown field {key:?} (ignored)"),
        });
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        match f.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{key} must be a string")),
        }
    };
    let flag = |key: &str| -> Result<Option<bool>, String> {
        match f.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(format!("{key} must be true or false")),
        }
    };
    let system_prompt = text("system_prompt")?;
    if system_prompt
        .as_ref()
        .is_some_and(|p| p.chars().count() > MAX_PROMPT)
    {
        return Err(format!(
            "system_prompt is longer than {MAX_PROMPT} characters"
        ));
    }
    let verbosity = match text("verbosity")? {
        None => None,
        Some(v) => Some(Verbosity::parse(&v).ok_or("verbosity must be off, tools or full")?),
    };
    let queue = match text("queue")? {
        None => None,
        Some(q) => {
            Some(QueueMode::parse(&q).ok_or("queue must be followup, collect or interrupt")?)
        }
    };
    Ok(ChatSettings {
        target: target.to_owned(),
        model: text("model")?,
        system_prompt,
        tools: Arc::new(tools(f.get("tools"))?),
        subagents: names(f.get("subagents"), "subagents")?.map(|s| s.into_iter().collect()),
        free_response: flag("free_response")?.unwrap_or(false),
        verbosity,
        queue,
        memory: flag("memory")?,
    })
}

fn tools(value: Option<&Value>) -> Result<ToolPolicy, String> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(ToolPolicy::default());
    };
    let Some(obj) = value.as_object() else {
        return Err("tools must be {\"allow\": [...], \"deny\": [...]}".into());
    };
    if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "allow" | "deny")) {
        return Err(format!(
            "tools has an unknown field {k:?} (use allow and deny)"
        ));
    }
    Ok(ToolPolicy {
        allow: names(obj.get("allow"), "tools.allow")?,
        deny: names(obj.get("deny"), "tools.deny")?.unwrap_or_default(),
    })
}

fn names(value: Option<&Value>, what: &str) -> Result<Option<BTreeSet<String>>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{what} must be a list of names"))
            })
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(format!("{what} must be a list of names")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(text: &str) -> (ChatBindings, Vec<ChatProblem>) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("chats.json");
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        load(
            &path,
            &[
                ("research", vec!["web_fetch", "read_file"]),
                ("analysis", vec!["read_file"]),
                ("operations", vec!["exec_command", "read_file"]),
            ],
        )
    }

    #[test]
    fn entries_bind_chats_and_topics_and_bad_ones_are_named() {
        let (b, problems) = load_str(
            r#"{"chats": {
                "telegram:-100": {"model": "mini", "tools": {"deny": ["exec_command"]}, "free_response": true, "colour": "red"},
                "telegram:-100/42": {"model": "big", "subagents": ["research"], "verbosity": "full", "queue": "collect", "memory": false},
                "slack:1": {},
                "discord:7": {"verbosity": "loud"}
            }}"#,
        );
        assert_eq!(b.len(), 2);
        let topic = ChatAddress::new(Platform::Telegram, ChatId(-100), Some(ThreadId(42)));
        let other_topic = ChatAddress::new(Platform::Telegram, ChatId(-100), Some(ThreadId(9)));
        let t = b.get(&topic, None).unwrap_or_else(|| panic!("topic bound"));
        assert_eq!(t.model.as_deref(), Some("big"));
        assert_eq!(
            (t.verbosity, t.queue, t.memory),
            (Some(Verbosity::Full), Some(QueueMode::Collect), Some(false))
        );
        assert!(t.tools.allows("delegate_to_research") && !t.tools.allows("delegate_to_analysis"));
        let g = b
            .get(&other_topic, None)
            .unwrap_or_else(|| panic!("group bound"));
        assert_eq!(g.model.as_deref(), Some("mini"));
        assert!(g.free_response && !g.tools.allows("exec_command") && g.tools.allows("read_file"));
        // A chat that denies exec_command denies the role that would run it.
        assert!(
            !g.tools.allows("delegate_to_operations") && g.tools.allows("delegate_to_research")
        );
        assert!(b
            .get(
                &ChatAddress::new(Platform::Telegram, ChatId(-5), None),
                None
            )
            .is_none());
        let named: Vec<&str> = problems.iter().map(|p| p.target.as_str()).collect();
        assert_eq!(
            named,
            ["discord:7", "slack:1", "telegram:-100"],
            "{problems:?}"
        );
        assert!(problems[2].problem.contains("unknown field \"colour\""));
        let (_, bad) = load_str("[1]");
        assert!(bad[0].problem.contains("expected"));
    }

    #[test]
    fn a_discord_thread_takes_its_own_entry_then_its_channels() {
        let (b, problems) = load_str(
            r#"{"chats": {
                "discord:11": {"model": "channel"},
                "discord:11/13": {"model": "thread-by-channel"},
                "discord:14": {"model": "thread-by-id"}
            }}"#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let thread = |id| ChatAddress::new(Platform::Discord, ChatId(id), None);
        let model = |id, parent| {
            b.get(&thread(id), parent)
                .and_then(|s| s.model.clone())
                .unwrap_or_default()
        };
        assert_eq!(model(13, Some(ChatId(11))), "thread-by-channel");
        assert_eq!(model(14, Some(ChatId(11))), "thread-by-id");
        assert_eq!(model(15, Some(ChatId(11))), "channel");
        assert_eq!(model(11, None), "channel");
        // A thread of an unbound channel, or one whose channel is unknown.
        assert_eq!(model(16, Some(ChatId(12))), "");
        assert_eq!(model(15, None), "");
    }
}
