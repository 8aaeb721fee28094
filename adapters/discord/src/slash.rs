//! Slash commands: the gateway's commands and the skills registered as global
//! application commands, so Discord's "/" picker offers them. Each takes one
//! optional `input` string (what would follow the command when typed). A
//! command used is answered at once (Discord wants an answer within 3 s) with
//! what was asked, then reaches the core as if typed: `/name input`.

use crate::errors::RestError;
use crate::render::{truncate_chars, MAX_CONTENT};
use crate::rest::Rest;
use serde_json::{json, Value};
use serenity::model::application::{CommandDataOptionValue, CommandInteraction};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use switchboard_platform::CommandInfo;

/// The option every command takes.
pub(crate) const INPUT: &str = "input";
/// Discord's limits for global chat-input commands.
const MAX_COMMANDS: usize = 100;
const MAX_NAME: usize = 32;
const MAX_DESCRIPTION: usize = 100;
/// Application command type 1 (chat input) and option type 3 (string).
const CHAT_INPUT: u8 = 1;
const STRING: u8 = 3;
/// Callback type 4: a message in the channel, as the interaction's response.
const CALLBACK_MESSAGE: u8 = 4;

/// The commands to register and the application to register them for; both
/// may arrive in either order (the menu from the core, the id with READY).
#[derive(Debug, Default)]
pub(crate) struct SlashMenu {
    application: AtomicU64,
    wanted: Mutex<Option<Value>>,
    /// What Discord has now, so each shard's READY does not register again.
    published: tokio::sync::Mutex<Option<Value>>,
}

impl SlashMenu {
    pub fn set(&self, commands: &[CommandInfo]) {
        *self.wanted.lock().unwrap_or_else(|p| p.into_inner()) = Some(body(commands));
    }

    /// Whether `id` is new to this process (the first READY, not a reconnect).
    pub fn know_application(&self, id: u64) -> bool {
        self.application.swap(id, Ordering::Relaxed) != id
    }

    /// Registers the wanted commands (a bulk overwrite) once both the menu
    /// and the application are known and Discord does not have them yet.
    pub async fn publish(&self, rest: &Rest) -> Result<(), RestError> {
        let application = self.application.load(Ordering::Relaxed);
        let wanted = self
            .wanted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let (Some(wanted), true) = (wanted, application != 0) else {
            return Ok(());
        };
        let mut published = self.published.lock().await;
        if published.as_ref() == Some(&wanted) {
            return Ok(());
        }
        rest.set_global_commands(application, &wanted).await?;
        let count = wanted.as_array().map_or(0, Vec::len);
        tracing::info!(commands = count, "Discord slash commands registered");
        *published = Some(wanted);
        Ok(())
    }
}

/// The bulk-overwrite body: commands Discord can name (others still work
/// typed), descriptions clipped to one line of 100 characters, at most 100.
pub(crate) fn body(commands: &[CommandInfo]) -> Value {
    let list: Vec<Value> = CommandInfo::menu(commands, MAX_COMMANDS, MAX_DESCRIPTION, valid_name)
        .into_iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": CHAT_INPUT,
                "description": c.description,
                "options": [{
                    "type": STRING,
                    "name": INPUT,
                    "description": "What follows the command, as you would type it",
                    "required": false,
                }],
            })
        })
        .collect();
    Value::Array(list)
}

fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.chars().count())
        && name
            .chars()
            .all(|c| c == '-' || c == '_' || (c.is_alphanumeric() && !c.is_uppercase()))
}

/// The command as it would have been typed: `/name input`.
pub(crate) fn typed(interaction: &CommandInteraction) -> String {
    let input = interaction
        .data
        .options
        .iter()
        .find(|o| o.name == INPUT)
        .and_then(|o| match &o.value {
            CommandDataOptionValue::String(s) => Some(s.trim()),
            _ => None,
        })
        .filter(|s| !s.is_empty());
    match input {
        Some(input) => format!("/{} {input}", interaction.data.name),
        None => format!("/{}", interaction.data.name),
    }
}

/// The immediate answer: the command as asked, visible in the channel (Discord
/// heads it with "X used /name"); the core's answer follows as messages.
pub(crate) fn echo_callback(typed: &str) -> Value {
    json!({
        "type": CALLBACK_MESSAGE,
        "data": {
            "content": truncate_chars(typed, MAX_CONTENT),
            "allowed_mentions": { "parse": [] },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_keeps_what_discord_accepts() {
        let body = body(&[
            CommandInfo::new("help", "What I can do"),
            CommandInfo::new("Help", "uppercase"),
            CommandInfo::new("two words", "space"),
            CommandInfo::new("x".repeat(33), "long"),
            CommandInfo::new("daily-report", "d".repeat(150)),
        ]);
        let list = body.as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = list.iter().filter_map(|c| c["name"].as_str()).collect();
        assert_eq!(names, ["help", "daily-report"]);
        let description = list[1]["description"].as_str().unwrap_or_default();
        assert_eq!(description.chars().count(), MAX_DESCRIPTION);
        assert_eq!(list[0]["options"][0]["name"], INPUT);
        assert_eq!(list[0]["options"][0]["type"], 3);
    }

    #[test]
    fn at_most_100_commands() {
        let many: Vec<_> = (0..130)
            .map(|i| CommandInfo::new(format!("c{i}"), "d"))
            .collect();
        assert_eq!(body(&many).as_array().map(Vec::len), Some(MAX_COMMANDS));
    }

    #[test]
    fn the_echo_never_pings() {
        let echo = echo_callback("/remind @everyone");
        assert_eq!(echo["type"], 4);
        assert_eq!(echo["data"]["allowed_mentions"]["parse"], json!([]));
    }
}
