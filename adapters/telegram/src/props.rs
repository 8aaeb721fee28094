//! Property tests (issue 18's fuzzing targets, bounded in the normal suite;
//! `PROPTEST_CASES=100000 cargo test -p switchboard-telegram props` for a long
//! run): the normalizer on hostile message text and entities — offsets past
//! the end, inside surrogate pairs, overlapping — never panics and never
//! forwards more text than came in; the HTML renderer on any Markdown emits
//! balanced tags and escapes every `<` it did not write.

use crate::fuzzing::{balanced, normalizer};
use crate::render::markdown_to_html;
use proptest::prelude::*;
use serde_json::json;

fn entity() -> impl Strategy<Value = serde_json::Value> {
    let kind = prop_oneof![
        Just("mention"),
        Just("bot_command"),
        Just("text_mention"),
        Just("bold"),
        Just("url"),
        Just("code"),
    ];
    (kind, 0u32..300, 0u32..300).prop_map(|(kind, offset, length)| {
        let mut e = json!({"type": kind, "offset": offset, "length": length});
        if kind == "text_mention" {
            e["user"] = json!({"id": 4242, "is_bot": true, "first_name": "Switch"});
        }
        e
    })
}

proptest! {
    #[test]
    fn hostile_entities_never_panic_the_normalizer(
        text in "\\PC{0,120}",
        entities in prop::collection::vec(entity(), 0..6),
        group in any::<bool>(),
    ) {
        let chat = if group {
            json!({"id": -100_500, "type": "supergroup", "title": "T"})
        } else {
            json!({"id": 9, "type": "private", "first_name": "Ann"})
        };
        let raw = json!({"update_id": 1, "message": {
            "message_id": 10, "date": 1_700_000_000, "chat": chat,
            "from": {"id": 9, "is_bot": false, "first_name": "Ann"},
            "text": text, "entities": entities,
        }})
        .to_string();
        // What teloxide refuses is skipped by the reader; what it takes must
        // normalize without a panic.
        let parsed = serde_json::from_str(&raw);
        if entities.is_empty() {
            prop_assert!(parsed.is_ok(), "the fixture is a valid update: {parsed:?}");
        }
        if let Ok(update) = parsed {
            if let crate::normalize::Action::Forward(switchboard_platform::Inbound::Message(m)) =
                normalizer().update(&update)
            {
                prop_assert!(m.text.chars().count() <= text.chars().count());
            }
        }
    }

    #[test]
    fn rendered_html_is_balanced_and_escaped(markdown in "(\\PC|[*_`<>&\\[\\]()#\\n~|-]){0,300}") {
        let html = markdown_to_html(&markdown);
        prop_assert!(balanced(&html), "{markdown:?} → {html:?}");
    }
}
