//! The entities Telegram finds by itself in a user's text — `mention` and
//! `bot_command` — by the rules of tdlib's `match_mentions` and
//! `match_bot_commands` (td/telegram/MessageEntity.cpp), offsets in UTF-16.
//!
//! - mention: `@` + 2–32 of `[A-Za-z0-9_]`, no word character just before or
//!   after;
//! - bot_command: `/` + 1–64 of `[A-Za-z0-9_]`, optionally `@` + 3–32 of them
//!   (the bot's username), with no word character, `/`, `<` or `>` just
//!   before or after. So "/etc/hosts" holds no command at all.

use serde_json::{json, Value};

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The `mention` and `bot_command` entities of `text`, by offset.
pub fn find(text: &str) -> Value {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let found = match chars[i] {
            '@' if !prev.is_some_and(is_word) => mention(&chars, i).map(|end| ("mention", end)),
            '/' if !prev.is_some_and(|p| is_word(p) || "/<>".contains(p)) => {
                command(&chars, i).map(|end| ("bot_command", end))
            }
            _ => None,
        };
        match found {
            Some((kind, end)) => {
                let offset: usize = chars[..i].iter().map(|c| c.len_utf16()).sum();
                let length: usize = chars[i..end].iter().map(|c| c.len_utf16()).sum();
                out.push(json!({"type": kind, "offset": offset, "length": length}));
                i = end;
            }
            None => i += 1,
        }
    }
    Value::Array(out)
}

/// The end of the run of name characters starting at `from`.
fn name_end(chars: &[char], from: usize) -> usize {
    chars[from..]
        .iter()
        .position(|c| !is_name(*c))
        .map_or(chars.len(), |n| from + n)
}

/// The end of a mention whose `@` is at `at`.
fn mention(chars: &[char], at: usize) -> Option<usize> {
    let end = name_end(chars, at + 1);
    let next = chars.get(end).copied();
    ((2..=32).contains(&(end - at - 1)) && !next.is_some_and(is_word)).then_some(end)
}

/// The end of a bot command whose `/` is at `at`.
fn command(chars: &[char], at: usize) -> Option<usize> {
    let mut end = name_end(chars, at + 1);
    if !(1..=64).contains(&(end - at - 1)) {
        return None;
    }
    if chars.get(end) == Some(&'@') {
        let bot_end = name_end(chars, end + 1);
        if !(3..=32).contains(&(bot_end - end - 1)) {
            return None;
        }
        end = bot_end;
    }
    let next = chars.get(end).copied();
    (!next.is_some_and(|c| is_word(c) || "/<>".contains(c))).then_some(end)
}
