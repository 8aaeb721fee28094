//! Fuzzing entry points (issue 18) for the Discord adapter: a gateway
//! message of any shape through the normalizer, in a DM, a channel and a
//! thread, and an interaction of any shape (a press, a menu choice, a modal
//! submit); they panic only when an invariant breaks. `fuzz/` runs it under
//! libFuzzer; the normal suite runs it on random bytes with a bounded case
//! count (below), and `props.rs` drives the same code with structured
//! inputs. Compiled for tests and with the `fuzzing` feature.

use crate::normalize::{message as normalize, Context, Place};
use serenity::model::application::Interaction;
use serenity::model::channel::Message;
use std::collections::HashSet;
use switchboard_platform::{Form, Menu, PressInput};

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

/// An interaction (`INTERACTION_CREATE`'s JSON) normalized: nothing
/// panics, and a press carries no more values, nor longer ones, than the
/// contract's menus and forms take.
pub fn interaction(data: &[u8]) {
    let Ok(interaction) = serde_json::from_slice::<Interaction>(data) else {
        return;
    };
    let none = HashSet::new();
    let ctx = Context {
        bot_id: BOT,
        bot_roles: &[],
        approvers: &none,
        approver_roles: &none,
        free_channels: &none,
    };
    let pressed = match &interaction {
        Interaction::Component(c) => crate::normalize::press(c, &ctx),
        Interaction::Modal(m) => crate::normalize::modal_submit(m, &ctx),
        _ => return,
    };
    match pressed.map(|p| p.input) {
        Ok(PressInput::Chosen(values)) => {
            assert!(values.len() <= Menu::MAX_OPTIONS);
            assert!(values
                .iter()
                .all(|v| v.chars().count() <= Menu::MAX_VALUE_CHARS));
        }
        Ok(PressInput::Form(fields)) => {
            assert!(fields.len() <= Form::MAX_FIELDS);
            assert!(fields
                .iter()
                .all(|f| f.value.chars().count() <= Form::MAX_VALUE_CHARS));
        }
        Ok(PressInput::None) | Err(_) => {}
    }
}

/// A fuzz target: its name in `fuzz/`, and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name `fuzz/` gives it.
pub const TARGETS: &[Target] = &[
    ("discord_message", message),
    ("discord_interaction", interaction),
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
