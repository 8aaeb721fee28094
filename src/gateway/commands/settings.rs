//! `/settings`: what the operator bound this chat (or topic) to in
//! `CHATS_FILE`, and what that means here. Approvers see it anywhere; other
//! users in their own DM.

use crate::domain::SessionKey;
use crate::gateway::Inner;
use switchboard_platform::User;

pub(crate) async fn run(inner: &Inner, key: &SessionKey, user: &User, private: bool) -> String {
    if !user.is_approver && !private {
        return "Only an approver can see this chat's settings here.".to_owned();
    }
    let Some(chat) = inner.chat_settings(key) else {
        return "This chat uses the operator's defaults (no entry in CHATS_FILE).".to_owned();
    };
    let mut lines = vec![format!("**Settings for this chat** (`{}`)", chat.target)];
    if let Some(model) = &chat.model {
        lines.push(format!(
            "model: `{model}` (unless `/model` chose another here)"
        ));
    }
    if chat.system_prompt.is_some() {
        lines.push("instructions: set by the operator".to_owned());
    }
    if let Some(allow) = &chat.tools.allow {
        lines.push(format!("tools allowed: {}", list(allow.iter())));
    }
    if !chat.tools.deny.is_empty() {
        lines.push(format!("tools denied: {}", list(chat.tools.deny.iter())));
    }
    if let Some(roles) = &chat.subagents {
        lines.push(format!(
            "sub-agents: {}",
            if roles.is_empty() {
                "none".to_owned()
            } else {
                list(roles.iter())
            }
        ));
    }
    if chat.free_response {
        lines.push("answers every message (no mention needed)".to_owned());
    }
    if let Some(v) = chat.verbosity {
        lines.push(format!("verbosity: {}", v.as_str()));
    }
    if let Some(q) = chat.queue {
        lines.push(format!("queue mode: {}", q.as_str()));
    }
    if let Some(m) = chat.memory {
        lines.push(format!(
            "long-term memory: {}",
            if m { "on" } else { "off" }
        ));
    }
    lines.join("\n")
}

fn list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
