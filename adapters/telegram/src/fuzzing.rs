//! Fuzzing entry points (issue 18) for the Telegram adapter: each takes
//! arbitrary bytes and panics only when an invariant breaks. `fuzz/` runs
//! them under libFuzzer; the normal suite runs them on random bytes with a
//! bounded case count (below), and `props.rs` drives the same code with
//! structured inputs. Compiled for tests and with the `fuzzing` feature.

use crate::get_updates::split_answer;
use crate::normalize::{Action, BotIdentity, Normalizer};
use crate::render::markdown_to_html;
use std::collections::HashSet;
use switchboard_platform::Inbound;

/// A normalizer for a bot `@SwitchBot` (id 4242).
pub(crate) fn normalizer() -> Normalizer {
    Normalizer::new(
        BotIdentity {
            id: 4242,
            username: "SwitchBot".into(),
        },
        HashSet::new(),
    )
}

/// Every HTML tag in `html` closed in order (Telegram refuses anything else).
pub(crate) fn balanced(html: &str) -> bool {
    let mut open: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        let Some(end) = rest[at..].find('>') else {
            return false;
        };
        let tag = &rest[at + 1..at + end];
        rest = &rest[at + end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            if open.pop().as_deref() != Some(name) {
                return false;
            }
        } else {
            let name = tag.split_whitespace().next().unwrap_or_default();
            open.push(name.to_owned());
        }
    }
    open.is_empty()
}

/// A `getUpdates` answer: split into updates (a bad one fails alone), each
/// read and normalized; nothing panics, and a forwarded message's text is
/// never longer than the answer it came in.
pub fn updates(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(updates) = split_answer(&text) else {
        return;
    };
    let normalizer = normalizer();
    for raw in updates {
        let Ok(update) = serde_json::from_str(&raw) else {
            continue;
        };
        if let Action::Forward(Inbound::Message(m)) = normalizer.update(&update) {
            assert!(m.text.chars().count() <= raw.chars().count(), "{raw:?}");
        }
    }
}

/// One update, as the webhook receives it.
pub fn update(data: &[u8]) {
    let mut answer = br#"{"ok":true,"result":["#.to_vec();
    answer.extend_from_slice(data);
    answer.extend_from_slice(b"]}");
    updates(&answer);
}

/// The Markdown → HTML renderer: balanced tags on any input.
pub fn render(data: &[u8]) {
    let markdown = String::from_utf8_lossy(data);
    let html = markdown_to_html(&markdown);
    assert!(balanced(&html), "{markdown:?} → {html:?}");
}

/// A fuzz target: its name in `fuzz/`, and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name `fuzz/` gives it.
pub const TARGETS: &[Target] = &[
    ("telegram_updates", updates),
    ("telegram_update", update),
    ("telegram_render", render),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_target_takes_any_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
            for (_, target) in TARGETS {
                target(&data);
            }
        }
    }
}
