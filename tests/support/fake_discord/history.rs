//! `GET /channels/{id}/messages` with `after` (the only paging a backfill
//! uses), as strict as Discord: `after` must be a snowflake and `limit` an
//! integer in 1..=100 (default 50), else 400 Invalid Form Body; an unknown
//! channel is 404 (10003), one the bot may not read 403 Missing Access
//! (50001). The answer holds the `limit` messages right after `after`,
//! newest first, as REST message objects (no `guild_id`, no `member`: only
//! gateway events carry those).

use super::rest::{error, Answer};
use super::{id_eq, FakeDiscord, Inner};
use serde_json::{json, Value};

/// Discord's default `limit`.
const DEFAULT_LIMIT: u64 = 50;

fn invalid(field: &str, code: &str, message: String) -> Answer {
    (
        400,
        json!({
            "message": "Invalid Form Body",
            "code": 50035,
            "errors": { field: { "_errors": [{ "code": code, "message": message }] } },
        }),
        Vec::new(),
    )
}

/// The query's value of `name`, if given.
fn param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

pub(crate) fn messages(inner: &Inner, channel: &str, query: &str) -> Answer {
    let Some(channel) = channel
        .parse::<u64>()
        .ok()
        .filter(|c| inner.channels.contains_key(c))
    else {
        return error(404, 10003, "Unknown Channel");
    };
    if inner.history_denied.contains(&channel) {
        return error(403, 50001, "Missing Access");
    }
    let after = match param(query, "after") {
        None => 0,
        Some(raw) => match raw.parse::<u64>() {
            Ok(after) => after,
            Err(_) => {
                return invalid(
                    "after",
                    "NUMBER_TYPE_COERCE",
                    format!("Value \"{raw}\" is not snowflake."),
                )
            }
        },
    };
    let limit = match param(query, "limit").map(str::parse::<u64>) {
        None => DEFAULT_LIMIT,
        Some(Ok(limit)) if (1..=100).contains(&limit) => limit,
        Some(Ok(limit)) if limit > 100 => {
            return invalid(
                "limit",
                "NUMBER_TYPE_MAX",
                "int value should be less than or equal to 100.".into(),
            )
        }
        Some(Ok(_)) => {
            return invalid(
                "limit",
                "NUMBER_TYPE_MIN",
                "int value should be greater than or equal to 1.".into(),
            )
        }
        Some(Err(_)) => return invalid("limit", "NUMBER_TYPE_COERCE", "Value is not int.".into()),
    };
    let mut ids: Vec<u64> = inner
        .order
        .iter()
        .copied()
        .filter(|id| *id > after)
        .filter(|id| {
            inner
                .messages
                .get(id)
                .is_some_and(|m| id_eq(&m["channel_id"], channel))
        })
        .collect();
    ids.sort_unstable();
    ids.truncate(limit as usize);
    let page: Vec<Value> = ids
        .iter()
        .rev()
        .filter_map(|id| inner.messages.get(id))
        .map(|m| {
            let mut m = m.clone();
            if let Some(fields) = m.as_object_mut() {
                fields.remove("guild_id");
                fields.remove("member");
            }
            m
        })
        .collect();
    (200, Value::Array(page), Vec::new())
}

impl FakeDiscord {
    /// The bot can no longer read `channel`'s history (403 Missing Access,
    /// as after losing VIEW_CHANNEL or READ_MESSAGE_HISTORY).
    pub fn deny_history(&self, channel: u64) {
        self.shared.lock().history_denied.insert(channel);
    }

    /// Message history reads of `channel` the fake answered, with their
    /// query strings (an empty first pair, as serenity writes `?&after=`,
    /// left out), in order.
    pub fn history_reads(&self, channel: u64) -> Vec<(u16, String)> {
        let path = format!("/channels/{channel}/messages");
        self.calls()
            .into_iter()
            .filter(|c| c.method == "GET" && c.path == path)
            .map(|c| (c.status, c.query.trim_start_matches('&').to_owned()))
            .collect()
    }
}
