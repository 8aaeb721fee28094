//! Fuzzing entry point (issue 18) for the Discord adapter: a gateway
//! message of any shape through the normalizer, in a DM, a channel and a
//! thread; it panics only when an invariant breaks. `fuzz/` runs it under
//! libFuzzer; the normal suite runs it on random bytes with a bounded case
//! count (below), and `props.rs` drives the same code with structured
//! inputs. Compiled for tests and with the `fuzzing` feature.

use crate::normalize::{message as normalize, Context, Place};
use serenity::model::channel::Message;
use std::collections::HashSet;

/// The bot's user id in the fuzzed messages' mentions.
pub(crate) const BOT: u64 = 4_000_000_000_000_000_001;

/// A message (`MESSAGE_CREATE`'s JSON) normalized in each kind of place:
/// nothing panics, the text forwarded never grows, every attachment is kept.
pub fn message(data: &[u8]) {
    let Ok(msg) = serde_json::from_slice::<Message>(data) else {
        return;
    };
    check(&msg);
}

/// [`message`]'s checks on one message.
pub(crate) fn check(msg: &Message) {
    let none = HashSet::new();
    let ctx = Context {
        bot_id: BOT,
        bot_roles: &[77],
        approvers: &none,
        approver_roles: &none,
        free_channels: &none,
    };
    for place in [
        Place::Dm,
        Place::Channel,
        Place::Thread { parent: Some(42) },
    ] {
        if let Some(m) = normalize(msg, place, &ctx, |_| false) {
            assert!(m.text.chars().count() <= msg.content.chars().count());
            assert_eq!(m.attachments.len(), msg.attachments.len());
        }
    }
}

/// A fuzz target: its name in `fuzz/`, and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name `fuzz/` gives it.
pub const TARGETS: &[Target] = &[("discord_message", message)];

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
