//! The bot's command menu (`setMyCommands`): the gateway's commands and the
//! skills, as far as Telegram can name them.

use switchboard_platform::CommandInfo;
use teloxide::types::BotCommand;

/// Telegram's limits for `BotCommand` and `setMyCommands`.
const MAX_NAME: usize = 32;
const MAX_DESCRIPTION: usize = 256;
const MAX_COMMANDS: usize = 100;

/// The menu Telegram accepts: names of 1–32 lowercase letters, digits and
/// underscores (others are left out; typed, they still work), descriptions of
/// 1–256 characters (clipped; an empty one becomes the name), at most 100.
pub(crate) fn menu(commands: &[CommandInfo]) -> Vec<BotCommand> {
    CommandInfo::menu(commands, MAX_COMMANDS, MAX_DESCRIPTION, valid_name)
        .into_iter()
        .map(|c| BotCommand::new(c.name, c.description))
        .collect()
}

fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_telegram_cannot_take_are_left_out() {
        let menu = menu(&[
            CommandInfo::new("help", "the commands"),
            CommandInfo::new("daily-report", "hyphen"),
            CommandInfo::new("Report", "capital"),
            CommandInfo::new("x".repeat(33), "too long"),
            CommandInfo::new("sum_2", "digits and underscores"),
        ]);
        let names: Vec<_> = menu.iter().map(|c| c.command.as_str()).collect();
        assert_eq!(names, ["help", "sum_2"]);
        let many: Vec<_> = (0..150)
            .map(|i| CommandInfo::new(format!("c{i}"), "d"))
            .collect();
        assert_eq!(super::menu(&many).len(), MAX_COMMANDS);
    }
}
