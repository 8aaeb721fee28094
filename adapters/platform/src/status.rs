//! Reactions as status: the states a user's message goes through while the
//! bot works on it (received, working, done, failed), the emoji each is shown
//! with on a platform, and a reaction a user put on a message.

use crate::ids::{ChatAddress, ChatId, ChatKind, MessageRef};
use crate::inbound::User;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where the turn started by a user's message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Status {
    /// The message was accepted and waits for its turn.
    Received,
    /// Its turn runs.
    Working,
    /// It was answered.
    Done,
    /// Its turn failed.
    Failed,
}

impl Status {
    pub const ALL: [Status; 4] = [
        Status::Received,
        Status::Working,
        Status::Done,
        Status::Failed,
    ];

    /// The setting naming this state's emoji.
    pub fn var(self) -> &'static str {
        match self {
            Status::Received => "REACTION_RECEIVED",
            Status::Working => "REACTION_WORKING",
            Status::Done => "REACTION_DONE",
            Status::Failed => "REACTION_FAILED",
        }
    }

    /// Whether nothing follows this state.
    pub fn is_final(self) -> bool {
        matches!(self, Status::Done | Status::Failed)
    }
}

/// The emoji each [`Status`] is shown with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEmoji {
    pub received: String,
    pub working: String,
    pub done: String,
    pub failed: String,
}

/// A reaction setting is unusable; the message names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {problem}")]
pub struct StatusConfigError {
    pub var: &'static str,
    pub problem: String,
}

impl StatusEmoji {
    pub fn new(received: &str, working: &str, done: &str, failed: &str) -> StatusEmoji {
        StatusEmoji {
            received: received.to_owned(),
            working: working.to_owned(),
            done: done.to_owned(),
            failed: failed.to_owned(),
        }
    }

    pub fn emoji(&self, status: Status) -> &str {
        match status {
            Status::Received => &self.received,
            Status::Working => &self.working,
            Status::Done => &self.done,
            Status::Failed => &self.failed,
        }
    }

    fn slot(&mut self, status: Status) -> &mut String {
        match status {
            Status::Received => &mut self.received,
            Status::Working => &mut self.working,
            Status::Done => &mut self.done,
            Status::Failed => &mut self.failed,
        }
    }

    /// Reads `REACTIONS` (`on`, the default, or `off`) and the per-state
    /// `REACTION_*` emoji through `get`, each unset one taken from
    /// `defaults`; every emoji must pass `allowed` (the platform's list).
    /// `Ok(None)` when `REACTIONS=off`.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
        defaults: StatusEmoji,
        platform: &str,
        allowed: impl Fn(&str) -> bool,
    ) -> Result<Option<StatusEmoji>, StatusConfigError> {
        let get = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        match get("REACTIONS").map(|v| v.to_ascii_lowercase()).as_deref() {
            None | Some("on" | "true" | "1" | "yes") => {}
            Some("off" | "false" | "0" | "no") => return Ok(None),
            Some(other) => {
                return Err(StatusConfigError {
                    var: "REACTIONS",
                    problem: format!("`{other}` is neither `on` nor `off`"),
                })
            }
        }
        let mut emoji = defaults;
        for status in Status::ALL {
            if let Some(v) = get(status.var()) {
                if v.chars().count() > 8 || v.chars().any(|c| c.is_ascii_alphanumeric()) {
                    return Err(StatusConfigError {
                        var: status.var(),
                        problem: format!("`{v}` is not one emoji"),
                    });
                }
                *emoji.slot(status) = v;
            }
            let chosen = emoji.emoji(status);
            if !allowed(chosen) {
                return Err(StatusConfigError {
                    var: status.var(),
                    problem: format!(
                        "{platform} does not accept {chosen} as a reaction; choose one of its allowed reaction emoji (see the docs), or set REACTIONS=off"
                    ),
                });
            }
        }
        Ok(Some(emoji))
    }
}

/// A reaction a user added to a message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reaction {
    pub chat: ChatAddress,
    pub chat_kind: ChatKind,
    pub user: User,
    /// The message reacted to.
    pub message: MessageRef,
    /// The emoji added (a custom emoji's name on Discord).
    pub emoji: Vec<String>,
    pub timestamp: DateTime<Utc>,
    /// As [`crate::InboundMessage::parent`].
    #[serde(default)]
    pub parent: Option<ChatId>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<Option<StatusEmoji>, StatusConfigError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        StatusEmoji::from_env(
            |k| vars.get(k).cloned(),
            StatusEmoji::new("👀", "✍", "👌", "💔"),
            "Telegram",
            |e| e != "✅",
        )
    }

    #[test]
    fn reactions_are_on_by_default_and_off_by_the_setting() {
        assert_eq!(
            read(&[]).unwrap(),
            Some(StatusEmoji::new("👀", "✍", "👌", "💔"))
        );
        assert_eq!(read(&[("REACTIONS", "off")]).unwrap(), None);
        assert_eq!(
            read(&[("REACTIONS", "maybe")]).unwrap_err().var,
            "REACTIONS"
        );
    }

    #[test]
    fn a_state_takes_its_emoji_and_a_refused_one_is_a_config_error() {
        let got = read(&[("REACTION_DONE", "🎉")]).unwrap().unwrap();
        assert_eq!(got.emoji(Status::Done), "🎉");
        let err = read(&[("REACTION_DONE", "✅")]).unwrap_err();
        assert_eq!(err.var, "REACTION_DONE");
        assert!(err.to_string().contains("does not accept ✅"), "{err}");
        assert_eq!(
            read(&[("REACTION_FAILED", "no")]).unwrap_err().var,
            "REACTION_FAILED"
        );
    }
}
