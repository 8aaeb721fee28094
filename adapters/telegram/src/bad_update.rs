//! One update's JSON text → teloxide's `Update`, and the record of updates
//! that cannot be parsed: counted and logged by `update_id` and error class
//! only, since parser messages quote the payload (the user's text).

use crate::raw_json;
use std::sync::atomic::{AtomicU64, Ordering};
use teloxide::types::Update;

/// An update skipped because it does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadUpdate {
    /// Read leniently from the top level; `None` when even that is missing.
    pub update_id: Option<i64>,
    /// What kind of failure, never the parser's message.
    pub class: &'static str,
}

/// Parses one update. Never fails on the text's content beyond returning
/// [`BadUpdate`]: lone surrogates, any depth and unknown shapes are refused.
pub(crate) fn parse_update(text: &str) -> Result<Update, BadUpdate> {
    serde_json::from_str::<Update>(text).map_err(|e| BadUpdate {
        update_id: update_id(text),
        class: match e.classify() {
            serde_json::error::Category::Syntax => "syntax",
            serde_json::error::Category::Data => "data",
            serde_json::error::Category::Eof => "eof",
            serde_json::error::Category::Io => "io",
        },
    })
}

/// The top-level `update_id` of an update that may not parse.
pub(crate) fn update_id(text: &str) -> Option<i64> {
    raw_json::member(text, "update_id")?.parse().ok()
}

/// Updates skipped since start, for the operator and the tests.
#[derive(Debug, Default)]
pub(crate) struct SkippedUpdates(AtomicU64);

impl SkippedUpdates {
    /// Counts `bad` and logs it without any of its content.
    pub fn record(&self, bad: BadUpdate, via: &'static str) {
        self.0.fetch_add(1, Ordering::Relaxed);
        match bad.update_id {
            Some(id) => tracing::warn!(
                update_id = id,
                class = bad.class,
                via,
                "skipping a Telegram update that does not parse"
            ),
            None => tracing::warn!(
                class = bad.class,
                via,
                "skipping a Telegram update that does not parse and has no update_id"
            ),
        }
    }

    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisoned_updates_are_refused_with_their_id() {
        let lone = r#"{"update_id": 41, "message": {"text": "hi \ud800 there"}}"#;
        assert_eq!(
            parse_update(lone).err(),
            Some(BadUpdate {
                update_id: Some(41),
                class: "syntax"
            })
        );
        let deep = format!(
            r#"{{"update_id":42,"message":{}1{}}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        assert_eq!(
            parse_update(&deep).err().and_then(|b| b.update_id),
            Some(42)
        );
        assert_eq!(
            parse_update(r#"{"message": {"text": "\ud800"}}"#)
                .err()
                .map(|b| b.update_id),
            Some(None)
        );
        assert_eq!(update_id(r#"{"update_id": "7"}"#), None);
    }

    #[test]
    fn a_sound_update_parses() {
        let ok = r#"{"update_id": 43, "message": {"message_id": 1, "date": 0,
            "chat": {"id": 5, "type": "private", "first_name": "A"},
            "from": {"id": 5, "is_bot": false, "first_name": "A"}, "text": "hi"}}"#;
        assert_eq!(parse_update(ok).map(|u| u.id.0), Ok(43));
    }

    #[test]
    fn skipped_updates_are_counted() {
        let skipped = SkippedUpdates::default();
        skipped.record(
            BadUpdate {
                update_id: Some(1),
                class: "syntax",
            },
            "test",
        );
        skipped.record(
            BadUpdate {
                update_id: None,
                class: "eof",
            },
            "test",
        );
        assert_eq!(skipped.count(), 2);
    }
}
