//! Property test of the Discord normalizer (issue 18's fuzzing target):
//! messages with hostile content — forged mention tokens, role tokens, any
//! Unicode, attachments of any type — never panic the normalizer, and what it
//! forwards never grows.

use crate::fuzzing::check;
use proptest::prelude::*;
use serde_json::json;
use serenity::model::channel::Message;

fn content() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "\\PC{0,12}",
        prop::sample::select(vec![
            "<@4000000000000000001>",
            "<@!4000000000000000001>",
            "<@&77>",
            "<@",
            ">",
            "@everyone",
            "```",
            "\u{202E}",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..10).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn hostile_messages_never_panic_the_normalizer(
        text in content(),
        mime in prop::option::of("[a-z]{1,8}/[a-z0-9.+-]{1,12}"),
        with_file in any::<bool>(),
    ) {
        let mut attachments = Vec::new();
        if with_file {
            let mut a = json!({"id": "55", "filename": "f.bin", "size": 12, "url": "https://cdn/x", "proxy_url": "https://cdn/x"});
            if let Some(m) = &mime {
                a["content_type"] = json!(m);
            }
            attachments.push(a);
        }
        let raw = json!({
            "id": "9001", "channel_id": "42", "guild_id": "7",
            "author": {"id": "31", "username": "ann", "discriminator": "0", "global_name": "Ann", "avatar": null},
            "content": text, "timestamp": "2026-12-04T10:00:00+00:00", "edited_timestamp": null,
            "tts": false, "mention_everyone": false, "mentions": [], "mention_roles": ["77"],
            "attachments": attachments, "embeds": [], "pinned": false, "type": 0,
        });
        let msg = serde_json::from_value::<Message>(raw);
        prop_assert!(msg.is_ok(), "the fixture is a valid message: {msg:?}");
        let Ok(msg) = msg else { unreachable!() };
        check(&msg);
    }
}
