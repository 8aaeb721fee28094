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

    fn info(name: &str, description: &str) -> CommandInfo {
        CommandInfo {
            name: name.into(),
            description: description.into(),
        }
    }

    #[test]
    fn names_telegram_cannot_take_are_left_out() {
        let menu = menu(&[
            info("help", "the commands"),
            info("daily-report", "hyphen"),
            info("Report", "capital"),
            info(&"x".repeat(33), "too long"),
            info("help", "a duplicate"),
            info("sum_2", ""),
        ]);
        let names: Vec<_> = menu.iter().map(|c| c.command.as_str()).collect();
        assert_eq!(names, ["help", "sum_2"]);
        assert_eq!(
            menu[1].description, "sum_2",
            "an empty description becomes the name"
        );
    }

    #[test]
    fn descriptions_are_one_clipped_line_and_the_menu_has_at_most_100() {
        let long = format!("{}\nsecond line", "é".repeat(300));
        let menu_ = menu(&[info("long", &long)]);
        assert_eq!(menu_[0].description.chars().count(), MAX_DESCRIPTION);
        assert!(!menu_[0].description.contains("second line"));
        let many: Vec<_> = (0..150).map(|i| info(&format!("c{i}"), "d")).collect();
        assert_eq!(menu(&many).len(), MAX_COMMANDS);
    }
}
