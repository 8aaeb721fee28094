//! Normalization tests on Bot API JSON shaped like Telegram's.
#![allow(clippy::panic)]

use super::*;
use serde_json::{json, Value};

const BOT_ID: i64 = 4242;

fn normalizer() -> Normalizer {
    Normalizer::new(
        BotIdentity {
            id: BOT_ID,
            username: "SwitchBot".into(),
        },
        HashSet::from([7]),
    )
}

fn user(id: i64, name: &str) -> Value {
    json!({"id": id, "is_bot": false, "first_name": name})
}

fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "Switch", "username": "SwitchBot"})
}

fn dm_chat(id: i64) -> Value {
    json!({"id": id, "type": "private", "first_name": "Ann"})
}

fn group_chat(id: i64, forum: bool) -> Value {
    json!({"id": id, "type": "supergroup", "title": "Team", "is_forum": forum})
}

fn update(kind: &str, body: Value) -> Update {
    // teloxide's `Update` only deserializes from text (not from a `Value`),
    // which is also how it arrives from the wire.
    let raw = json!({"update_id": 1, kind: body}).to_string();
    match serde_json::from_str(&raw) {
        Ok(u) => u,
        Err(e) => panic!("update does not parse: {e}"),
    }
}

fn message(chat: Value, from: Value, text: &str, extra: Value) -> Value {
    let mut m =
        json!({"message_id": 10, "date": 1_700_000_000, "chat": chat, "from": from, "text": text});
    if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    m
}

fn forwarded(action: Action) -> InboundMessage {
    match action {
        Action::Forward(Inbound::Message(m)) => m,
        other => panic!("expected a forwarded message, got {other:?}"),
    }
}

#[test]
fn dm_is_addressed_and_flags_approvers() {
    let n = normalizer();
    let m = forwarded(n.update(&update(
        "message",
        message(dm_chat(7), user(7, "Ann"), "hello", json!({})),
    )));
    assert_eq!(m.chat_kind, ChatKind::Dm);
    assert_eq!(m.addressed, Addressed::Dm);
    assert_eq!(m.text, "hello");
    assert_eq!(m.chat.thread, None);
    assert!(m.user.is_approver);
    assert_eq!(m.user.display_name, "Ann");
    assert_eq!(m.message_id, MessageId(10));
}

#[test]
fn group_mention_is_stripped() {
    let n = normalizer();
    let text = "hey 😀 @SwitchBot, what now?";
    let offset = "hey 😀 ".encode_utf16().count();
    let m = forwarded(n.update(&update(
        "message",
        message(
            group_chat(-100, false),
            user(8, "Bob"),
            text,
            json!({"entities": [{"type": "mention", "offset": offset, "length": 10}]}),
        ),
    )));
    assert_eq!(m.addressed, Addressed::Mention);
    assert_eq!(m.text, "hey 😀 , what now?");
    assert!(!m.user.is_approver);

    let m = forwarded(n.update(&update(
        "message",
        message(
            group_chat(-100, false),
            user(8, "Bob"),
            "@switchbot summarize",
            json!({"entities": [{"type": "mention", "offset": 0, "length": 10}]}),
        ),
    )));
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Mention, "summarize")
    );
}

#[test]
fn group_chatter_is_forwarded_unaddressed() {
    let n = normalizer();
    let m = forwarded(n.update(&update(
        "message",
        message(
            group_chat(-100, false),
            user(8, "Bob"),
            "mail @SwitchBotFan now",
            json!({"entities": [{"type": "mention", "offset": 5, "length": 13}]}),
        ),
    )));
    assert_eq!(m.addressed, Addressed::NotAddressed);
    assert_eq!(m.text, "mail @SwitchBotFan now");
}

/// A `bot_command` entity at offset 0 covering `len` UTF-16 units, as
/// Telegram attaches to a message opening with a command.
fn command_entity(len: usize) -> Value {
    json!({"entities": [{"type": "bot_command", "offset": 0, "length": len}]})
}

#[test]
fn commands_are_normalized() {
    let n = normalizer();
    let group = |text: &str, command_len: usize| {
        forwarded(n.update(&update(
            "message",
            message(
                group_chat(-100, false),
                user(8, "Bob"),
                text,
                command_entity(command_len),
            ),
        )))
    };
    let m = group("/help@SwitchBot me", 15);
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Command, "/help me")
    );
    let m = group("/help@switchbot", 15);
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Command, "/help")
    );
    let m = group("/clear", 6);
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Command, "/clear")
    );
    let m = group("/start@OtherBot", 15);
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::NotAddressed, "/start@OtherBot")
    );
    let m = forwarded(n.update(&update(
        "message",
        message(
            dm_chat(8),
            user(8, "Bob"),
            "/start@SwitchBot",
            command_entity(16),
        ),
    )));
    assert_eq!((m.addressed, m.text.as_str()), (Addressed::Dm, "/start"));
}

#[test]
fn only_a_bot_command_entity_at_the_start_is_a_command() {
    let n = normalizer();
    let in_group = |text: &str, extra: Value| {
        forwarded(n.update(&update(
            "message",
            message(group_chat(-100, false), user(8, "Bob"), text, extra),
        )))
    };
    // A path is no command: Telegram attaches no `bot_command` entity to it.
    let m = in_group("/etc/hosts is broken", json!({}));
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::NotAddressed, "/etc/hosts is broken")
    );
    // A command later in the text does not address the bot either.
    let m = in_group(
        "try /help",
        json!({"entities": [{"type": "bot_command", "offset": 4, "length": 5}]}),
    );
    assert_eq!(m.addressed, Addressed::NotAddressed);
    // An entity that does not cover a command's shape is not trusted.
    let m = in_group("/etc/hosts", command_entity(10));
    assert_eq!(m.addressed, Addressed::NotAddressed);
    // Not a command, but still addressed by a mention.
    let m = in_group(
        "/etc/hosts @SwitchBot why?",
        json!({"entities": [{"type": "mention", "offset": 11, "length": 10}]}),
    );
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Mention, "/etc/hosts why?")
    );
    // ... or by a reply to the bot.
    let bot_msg = json!({"message_id": 5, "date": 1_700_000_000,
        "chat": group_chat(-100, false), "from": bot_user(), "text": "earlier"});
    let m = in_group("/etc/hosts is broken", json!({"reply_to_message": bot_msg}));
    assert_eq!(m.addressed, Addressed::ReplyToBot);
    // Another bot's command stays unaddressed, even in a reply to ours.
    let m = in_group(
        "/help@OtherBot",
        json!({"reply_to_message": bot_msg, "entities": [{"type": "bot_command", "offset": 0, "length": 14}]}),
    );
    assert_eq!(m.addressed, Addressed::NotAddressed);
    // In a DM a path is just text.
    let m = forwarded(n.update(&update(
        "message",
        message(dm_chat(8), user(8, "Bob"), "/etc/hosts?", json!({})),
    )));
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Dm, "/etc/hosts?")
    );
}

#[test]
fn reply_to_bot_and_forum_topics() {
    let n = normalizer();
    let bot_msg = json!({"message_id": 5, "date": 1_700_000_000, "chat": group_chat(-100, true),
        "from": bot_user(), "text": "earlier answer", "message_thread_id": 3, "is_topic_message": true});
    let m = forwarded(n.update(&update(
        "message",
        message(
            group_chat(-100, true),
            user(8, "Bob"),
            "and then?",
            json!({"reply_to_message": bot_msg, "message_thread_id": 3, "is_topic_message": true}),
        ),
    )));
    assert_eq!(m.addressed, Addressed::ReplyToBot);
    assert_eq!(m.chat.thread, Some(ThreadId(3)));
    assert_eq!(m.reply_to, Some(MessageId(5)));

    // A plain topic message "replies" to the topic root, which is not the bot.
    let root = json!({"message_id": 3, "date": 1_700_000_000, "chat": group_chat(-100, true),
        "from": bot_user(), "forum_topic_created": {"name": "ops", "icon_color": 7322096},
        "message_thread_id": 3, "is_topic_message": true});
    let m = forwarded(n.update(&update(
        "message",
        message(
            group_chat(-100, true),
            user(8, "Bob"),
            "just chatting",
            json!({"reply_to_message": root, "message_thread_id": 3, "is_topic_message": true}),
        ),
    )));
    assert_eq!(m.addressed, Addressed::NotAddressed);
    assert_eq!(m.reply_to, None);
    assert_eq!(m.chat.thread, Some(ThreadId(3)));
}

#[test]
fn captions_are_text_and_bare_media_is_forwarded_without_text() {
    let n = normalizer();
    let photo =
        json!([{"file_id": "f", "file_unique_id": "u", "width": 1, "height": 1, "file_size": 99}]);
    let with_caption = json!({"message_id": 11, "date": 1_700_000_000, "chat": dm_chat(8),
        "from": user(8, "Bob"), "photo": photo, "caption": "what is this?"});
    let m = forwarded(n.update(&update("message", with_caption)));
    assert_eq!(m.text, "what is this?");
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(
        m.attachments[0].kind,
        switchboard_platform::AttachmentKind::Image
    );
    assert_eq!(m.attachments[0].size, Some(99));

    let bare = json!({"message_id": 12, "date": 1_700_000_000, "chat": dm_chat(8),
        "from": user(8, "Bob"), "photo": photo});
    // Bare media goes to the core (which answers it after its access checks).
    let m = forwarded(n.update(&update("message", bare.clone())));
    assert_eq!(m.text, "");
    assert_eq!(m.chat.chat, ChatId(8));
    assert_eq!(m.message_id, MessageId(12));
    assert_eq!(
        m.attachments[0].kind,
        switchboard_platform::AttachmentKind::Image
    );
    let mut in_group = bare;
    in_group["chat"] = group_chat(-100, false);
    assert!(matches!(
        n.update(&update("message", in_group.clone())),
        Action::Ignore(_)
    ));
    // Unless it is part of an album: the album decides (its caption may
    // mention the bot).
    in_group["media_group_id"] = json!("13579");
    let m = forwarded(n.update(&update("message", in_group)));
    assert_eq!(
        (m.addressed, m.attachments.len()),
        (Addressed::NotAddressed, 1)
    );
}

#[test]
fn a_photo_is_its_largest_size_a_bot_can_download() {
    let n = normalizer();
    let size = |id: &str, bytes: u64| json!({"file_id": id, "file_unique_id": id, "width": 10, "height": 10, "file_size": bytes});
    let photo = json!([size("s", 900), size("m", 9 << 20), size("xl", 21 << 20)]);
    let msg = json!({"message_id": 14, "date": 1_700_000_000, "chat": dm_chat(8),
        "from": user(8, "Bob"), "photo": photo});
    let m = forwarded(n.update(&update("message", msg)));
    assert_eq!(m.attachments[0].handle.0, "m");
}

#[test]
fn stickers_are_no_attachment_and_no_message() {
    let n = normalizer();
    let sticker = json!({"message_id": 13, "date": 1_700_000_000, "chat": dm_chat(8),
        "from": user(8, "Bob"), "sticker": {"file_id": "s", "file_unique_id": "u",
        "type": "regular", "width": 512, "height": 512, "is_animated": false,
        "is_video": false}});
    assert!(matches!(
        n.update(&update("message", sticker)),
        Action::Ignore(_)
    ));
}

#[test]
fn edits_channels_and_own_messages_are_ignored() {
    let n = normalizer();
    let edited = message(
        dm_chat(8),
        user(8, "Bob"),
        "fixed",
        json!({"edit_date": 1_700_000_100}),
    );
    assert!(matches!(
        n.update(&update("edited_message", edited)),
        Action::Ignore(_)
    ));
    let post = json!({"message_id": 1, "date": 1_700_000_000,
        "chat": {"id": -1009, "type": "channel", "title": "News"}, "text": "news"});
    assert!(matches!(
        n.update(&update("channel_post", post)),
        Action::Ignore(_)
    ));
    let own = message(group_chat(-100, false), bot_user(), "mine", json!({}));
    assert!(matches!(
        n.update(&update("message", own)),
        Action::Ignore(_)
    ));
}

#[test]
fn callbacks_become_presses_or_are_answered() {
    let n = normalizer();
    let card = json!({"message_id": 20, "date": 1_700_000_000, "chat": group_chat(-100, true),
        "from": bot_user(), "text": "Allow?", "message_thread_id": 3, "is_topic_message": true});
    let q = |data: &str| json!({"id": "cb1", "from": user(7, "Ann"), "chat_instance": "ci", "data": data, "message": card});
    match n.update(&update("callback_query", q("ap:123:allow"))) {
        Action::Forward(Inbound::ButtonPress(p)) => {
            assert_eq!(p.action.as_str(), "ap:123:allow");
            assert_eq!(p.chat.thread, Some(ThreadId(3)));
            assert_eq!(p.message.map(|m| m.id), Some(MessageId(20)));
            assert_eq!(p.handle, PressHandle("cb1".into()));
            assert!(p.user.is_approver);
        }
        other => panic!("expected a press, got {other:?}"),
    }
    assert!(matches!(
        n.update(&update("callback_query", q("not an id"))),
        Action::AnswerEmpty(id) if id == "cb1"
    ));
}

#[test]
fn utf16_ranges_are_checked() {
    assert_eq!(utf16_range("a😀b", 1, 2), Some(1..5));
    assert_eq!(utf16_range("a😀b", 2, 1), None, "inside a surrogate pair");
    assert_eq!(utf16_range("ab", 1, 5), None, "past the end");
    assert_eq!(utf16_range("ab", 2, 0), Some(2..2));
}

#[test]
fn thousands_of_entities_map_to_the_right_text() {
    // 3,000 mentions between surrogate pairs, each with a bogus twin that
    // starts inside a pair, plus one past the end: the bogus ones are
    // refused, every real mention is stripped.
    let unit = "😀 @SwitchBot ";
    let units = unit.encode_utf16().count();
    let text = unit.repeat(3_000);
    let mut entities: Vec<Value> = (0..3_000)
        .flat_map(|i| {
            [
                json!({"type": "mention", "offset": i * units + 3, "length": 10}),
                json!({"type": "mention", "offset": i * units + 1, "length": 10}),
            ]
        })
        .collect();
    entities.push(json!({"type": "mention", "offset": 3_000 * units, "length": 10}));
    let m = forwarded(normalizer().update(&update(
        "message",
        message(
            group_chat(-100, false),
            user(5, "Bo"),
            &text,
            json!({ "entities": entities }),
        ),
    )));
    assert_eq!(m.addressed, Addressed::Mention);
    assert!(!m.text.contains('@'), "every mention stripped");
    assert_eq!(m.text.matches('😀').count(), 3_000);
}

#[test]
fn unparseable_updates_are_ignored() {
    let raw = json!({"update_id": 9, "message": {"garbage": true}}).to_string();
    let parsed: Result<Update, _> = serde_json::from_str(&raw);
    if let Ok(u) = parsed {
        assert!(matches!(normalizer().update(&u), Action::Ignore(_)));
    }
}

#[test]
fn stripping_a_mention_keeps_the_rest_of_the_text_as_typed() {
    let strip = |text: &str| {
        let at = text.find("@switchbot").unwrap_or(0);
        let mention = at..at + "@switchbot".len();
        strip_ranges(text, std::slice::from_ref(&mention))
    };
    assert_eq!(
        strip("@switchbot fix this:\n\n    def f():\n        return  1"),
        "fix this:\n\n    def f():\n        return  1"
    );
    assert_eq!(
        strip("@switchbot\n```python\nif x:\n    pass\n```"),
        "```python\nif x:\n    pass\n```"
    );
    assert_eq!(strip("@switchbot\n    indented"), "    indented");
    assert_eq!(strip("ask @switchbot  now,  please"), "ask now,  please");
    assert_eq!(strip("a\n\t@switchbot\tb\n  c"), "a\n\tb\n  c");
    assert_eq!(strip("  @switchbot: table | a  | b |"), "table | a  | b |");
    assert_eq!(strip("thanks @switchbot"), "thanks");
}
