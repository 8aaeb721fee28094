//! The Telegram adapter driven directly against the fake Bot API: inbound
//! normalization, presses, rendering, chunking, flood control, typing and
//! secret hygiene (updates, offsets and webhooks: `telegram_updates.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;
use support::fake_telegram::{FakeTelegram, FakeUser, Where};
use support::telegram_run::{addr, card, config, raw_call, Running, WAIT};
use switchboard_platform::{
    chunk_markdown, measure, Activity, Addressed, ChatId, ChatKind, LengthUnit, MessageId,
    OutgoingMessage, PlatformAdapter, PlatformError, PressAnswer, Secret, ThreadId,
};
use switchboard_telegram::TelegramAdapter;

#[tokio::test]
async fn dms_groups_mentions_replies_and_topics_are_normalized() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(900, "Ann");
    let bob = FakeUser::new(901, "Bob");
    let mut r = Running::start(config(&fake, dir.path())).await;

    fake.message(Where::Dm, &ann, "hello there");
    let m = r.next_message().await;
    assert_eq!((m.chat_kind, m.addressed), (ChatKind::Dm, Addressed::Dm));
    assert_eq!((m.chat.chat, m.text.as_str()), (ChatId(900), "hello there"));
    assert!(m.user.is_approver, "900 is in the approvers");

    fake.message(Where::Group(-1001), &bob, "just chatting");
    let m = r.next_message().await;
    assert_eq!(
        (m.chat_kind, m.addressed),
        (ChatKind::Group, Addressed::NotAddressed)
    );
    assert!(!m.user.is_approver);

    let mention = format!("@{} what is 2+2?", r.adapter.bot_username());
    fake.message(Where::Group(-1001), &bob, &mention);
    let m = r.next_message().await;
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Mention, "what is 2+2?")
    );

    let cmd = format!("/help@{} tools", r.adapter.bot_username());
    fake.message(Where::Group(-1001), &bob, &cmd);
    let m = r.next_message().await;
    assert_eq!(
        (m.addressed, m.text.as_str()),
        (Addressed::Command, "/help tools")
    );

    let answer = r
        .adapter
        .send(&addr(-1001, None), OutgoingMessage::text("4"))
        .await
        .unwrap();
    fake.reply(Where::Group(-1001), &bob, "and times 3?", answer.id.0);
    let m = r.next_message().await;
    assert_eq!(m.addressed, Addressed::ReplyToBot);
    assert_eq!(m.reply_to, Some(answer.id));

    let topic = Where::Topic {
        chat: -1002,
        thread: 77,
    };
    fake.message(topic, &bob, &format!("hi @{}", r.adapter.bot_username()));
    let m = r.next_message().await;
    assert_eq!(m.chat.thread, Some(ThreadId(77)));
    assert_eq!(m.addressed, Addressed::Mention);
    let sent = r
        .adapter
        .send(
            &m.chat,
            OutgoingMessage::text("in the topic").replying_to(Some(m.message_id)),
        )
        .await
        .unwrap();
    assert_eq!(sent.chat.thread, Some(ThreadId(77)));
    let stored = fake.stored(-1002, sent.id.0).unwrap();
    assert_eq!(stored.thread_id, Some(77), "answer went to the same topic");
    assert_eq!(stored.reply_to, Some(m.message_id.0));
    r.stop().await;
}

#[tokio::test]
async fn only_commands_for_this_bot_address_it_in_groups() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bob = FakeUser::new(905, "Bob");
    let mut r = Running::start(config(&fake, dir.path())).await;
    let ours = r.adapter.bot_username().to_owned();
    let group = Where::Group(-1005);
    for (text, addressed, normalized) in [
        (
            "/etc/hosts is broken".to_owned(),
            Addressed::NotAddressed,
            "/etc/hosts is broken".to_owned(),
        ),
        ("/help".to_owned(), Addressed::Command, "/help".to_owned()),
        (
            format!("/help@{} tools", ours.to_uppercase()),
            Addressed::Command,
            "/help tools".to_owned(),
        ),
        (
            "/help@otherbot".to_owned(),
            Addressed::NotAddressed,
            "/help@otherbot".to_owned(),
        ),
        (
            "see /help".to_owned(),
            Addressed::NotAddressed,
            "see /help".to_owned(),
        ),
    ] {
        fake.message(group, &bob, &text);
        let m = r.next_message().await;
        assert_eq!(
            (m.addressed, m.text.as_str()),
            (addressed, normalized.as_str()),
            "{text:?}"
        );
    }
    r.stop().await;
}

#[tokio::test]
async fn the_fake_finds_bot_commands_where_telegram_does() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let bob = FakeUser::new(906, "Bob");
    let commands = |text: &str| -> Vec<(u64, u64)> {
        let update = fake.message_update(Where::Group(-1006), &bob, text);
        update["message"]["entities"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "bot_command")
            .map(|e| (e["offset"].as_u64().unwrap(), e["length"].as_u64().unwrap()))
            .collect()
    };
    let none: Vec<(u64, u64)> = Vec::new();
    assert_eq!(commands("/etc/hosts is broken"), none);
    assert_eq!(commands("/help"), [(0, 5)]);
    assert_eq!(commands("/help@switchbot_test_bot now"), [(0, 24)]);
    assert_eq!(commands("/help@otherbot"), [(0, 14)]);
    assert_eq!(commands("/help, please"), [(0, 5)]);
    assert_eq!(commands("😀 /start"), [(3, 6)]);
    assert_eq!(commands("a/b /x/y /é /q@ab <br/> 1/2"), none);
    assert_eq!(commands(&format!("/{}", "x".repeat(65))), none);
    let mentions = fake.message_update(Where::Group(-1006), &bob, "(@switchbot_test_bot) a@b.c");
    assert_eq!(
        mentions["message"]["entities"],
        serde_json::json!([{"type": "mention", "offset": 1, "length": 19}])
    );
}

#[tokio::test]
async fn captions_media_edits_and_channel_posts() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(910, "Ann");
    let mut r = Running::start(config(&fake, dir.path())).await;

    fake.photo(Where::Dm, &ann, Some("what is in this picture?"));
    let m = r.next_message().await;
    assert_eq!(m.text, "what is in this picture?");
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(
        m.attachments[0].kind,
        switchboard_platform::AttachmentKind::Image
    );

    let bare = fake.photo(Where::Dm, &ann, None);
    let first = fake.message(Where::Dm, &ann, "first text");
    fake.edited(Where::Dm, &ann, first.message_id, "first text, edited");
    fake.push_raw(
        serde_json::json!({"channel_post": {"message_id": 1, "date": 0,
        "chat": {"id": -100_500, "type": "channel", "title": "News"}, "text": "news"}}),
    );
    fake.message(Where::Dm, &ann, "sentinel");

    // In order: the bare photo (no text: the core answers it after its access
    // checks), then the texts; no edit, no channel post.
    let photo = r.next_message().await;
    assert_eq!(photo.message_id.0, bare.message_id);
    assert_eq!(photo.text, "");
    assert_eq!(
        photo.attachments[0].kind,
        switchboard_platform::AttachmentKind::Image
    );
    assert_eq!(r.next_message().await.text, "first text");
    assert_eq!(r.next_message().await.text, "sentinel");
    // The adapter polls for messages and presses only, so Telegram never even
    // created the edit and the channel post.
    assert_eq!(fake.filtered_updates(), 2);
    assert!(
        fake.bot_messages(910).is_empty(),
        "the adapter itself answers nothing"
    );
    r.stop().await;
}

#[tokio::test]
async fn presses_are_forwarded_and_answered_exactly_once() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(920, "Ann");
    let eve = FakeUser::new(921, "Eve");
    let mut cfg = config(&fake, dir.path());
    cfg.press_answer_timeout = Duration::from_millis(300);
    let mut r = Running::start(cfg).await;
    let group = Where::Topic {
        chat: -2001,
        thread: 5,
    };
    fake.ensure_chat(group, &ann);
    let chat = addr(-2001, Some(5));

    let sent = r
        .adapter
        .send(&chat, card("Run `ls`?", &["ap:1:allow", "ap:1:deny"]))
        .await
        .unwrap();
    let keyboard = fake.stored(-2001, sent.id.0).unwrap().reply_markup.unwrap();
    assert_eq!(
        keyboard["inline_keyboard"][0][0]["callback_data"],
        "ap:1:allow"
    );

    // Someone else presses: private refusal, card unchanged.
    let q1 = fake.callback(group, &eve, sent.id.0, "ap:1:allow");
    let p = r.next_press().await;
    assert_eq!((p.user.id.0, p.action.as_str()), (921, "ap:1:allow"));
    assert_eq!(p.chat.thread, Some(ThreadId(5)));
    assert_eq!(p.message.map(|m| m.id), Some(sent.id));
    r.adapter
        .answer_press(
            &p,
            PressAnswer::Private("Only Ann or an approver can decide.".into()),
        )
        .await
        .unwrap();
    let answers = fake.calls_to("AnswerCallbackQuery");
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].params["callback_query_id"], q1.as_str());
    assert_eq!(
        answers[0].params["text"],
        "Only Ann or an approver can decide."
    );
    assert!(fake
        .stored(-2001, sent.id.0)
        .unwrap()
        .reply_markup
        .is_some());

    // The requester decides: answered, card edited, keyboard removed.
    fake.callback(group, &ann, sent.id.0, "ap:1:deny");
    let p = r.next_press().await;
    r.adapter
        .answer_press(
            &p,
            PressAnswer::Update(OutgoingMessage::text("Run `ls`? — **denied** by Ann")),
        )
        .await
        .unwrap();
    let card_now = fake.stored(-2001, sent.id.0).unwrap();
    assert_eq!(card_now.text, "Run ls? — denied by Ann");
    assert!(card_now.reply_markup.is_none(), "keyboard removed");
    assert_eq!(fake.calls_to("AnswerCallbackQuery").len(), 2);

    // Unknown callback data: answered, never forwarded.
    fake.callback(group, &ann, sent.id.0, "not an action id");
    // A press the core never answers is answered empty after the timeout.
    fake.callback(group, &ann, sent.id.0, "ap:1:allow");
    let late = r.next_press().await;
    assert_eq!(late.action.as_str(), "ap:1:allow");
    assert!(
        fake.wait_until(WAIT, |f| f.calls_to("AnswerCallbackQuery").len() == 4)
            .await
    );
    assert_eq!(r.adapter.pending_presses(), 0);
    // The core answering after the timeout does not answer a second time.
    r.adapter
        .answer_press(&late, PressAnswer::Ack)
        .await
        .unwrap();
    let answers = fake.calls_to("AnswerCallbackQuery");
    assert_eq!(answers.len(), 4);
    assert!(
        answers.iter().all(|c| c.ok),
        "every callback answered once: {answers:?}"
    );
    r.stop().await;
}

#[tokio::test]
async fn markdown_is_rendered_with_a_plain_fallback_and_unmodified_edits_succeed() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(930, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    let r = Running::start(config(&fake, dir.path())).await;
    let chat = addr(930, None);

    let md = "# Result\n\nIf a < b && c > d, **bold** and [docs](https://e.test/?a=1&b=2)\n\n```rust\nlet x = a<b;\n```";
    let sent = r
        .adapter
        .send(&chat, OutgoingMessage::text(md))
        .await
        .unwrap();
    let m = fake.stored(930, sent.id.0).unwrap();
    assert_eq!(m.parse_mode.as_deref(), Some("HTML"));
    assert_eq!(
        m.text,
        "Result\n\nIf a < b && c > d, bold and docs\n\nlet x = a<b;"
    );
    let kinds: Vec<&str> = m.entities.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["bold", "bold", "text_link", "pre"]);
    assert_eq!(m.entities[3].language.as_deref(), Some("rust"));
    assert_eq!(
        m.entities[2].url.as_deref(),
        Some("https://e.test/?a=1&b=2")
    );

    // Same content again: "message is not modified" is success.
    r.adapter
        .edit(&sent, OutgoingMessage::text(md))
        .await
        .unwrap();
    assert!(fake.calls_to("EditMessageText").iter().any(|c| c
        .description
        .as_deref()
        .is_some_and(|d| d.contains("message is not modified"))));

    // Telegram refuses the HTML: the same chunk goes out once more, as plain text.
    fake.fail_html(930, 2);
    let plain = r
        .adapter
        .send(&chat, OutgoingMessage::text("**x** <y>"))
        .await
        .unwrap();
    let m = fake.stored(930, plain.id.0).unwrap();
    assert_eq!(
        (m.text.as_str(), m.parse_mode.as_deref()),
        ("**x** <y>", None)
    );
    r.adapter
        .edit(&plain, OutgoingMessage::text("**z**"))
        .await
        .unwrap();
    assert_eq!(fake.stored(930, plain.id.0).unwrap().text, "**z**");
    let sends = fake.calls_to("SendMessage");
    assert_eq!(
        sends.iter().filter(|c| c.ok).count(),
        2,
        "no duplicate message"
    );
    r.stop().await;
}

#[tokio::test]
async fn long_answers_with_emoji_and_cjk_fit_in_chunks() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(940, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    let r = Running::start(config(&fake, dir.path())).await;
    let caps = r.adapter.capabilities().clone();

    let mut text = String::new();
    for i in 0..150 {
        text.push_str(&format!(
            "Paragraph {i}: 😀🎉 多语言文本测试 & <tags> **bold** text.\n\n"
        ));
        if i % 15 == 0 {
            text.push_str("```python\n");
            for j in 0..40 {
                text.push_str(&format!("print('行 {j} 🚀 a<b')\n"));
            }
            text.push_str("```\n\n");
        }
    }
    assert!(measure(&text, caps.length_unit) > 10_000);
    let chunks = chunk_markdown(&text, caps.max_message_len, caps.length_unit);
    assert!(chunks.len() >= 3);
    let chat = addr(940, None);
    for chunk in &chunks {
        assert!(measure(chunk, caps.length_unit) <= 4096);
        let fences = chunk
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert_eq!(fences % 2, 0, "fences balanced in every chunk");
        r.adapter
            .send(&chat, OutgoingMessage::text(chunk.clone()))
            .await
            .unwrap();
    }
    let stored = fake.bot_messages(940);
    assert_eq!(stored.len(), chunks.len());
    assert!(stored.iter().all(|m| m.text.encode_utf16().count() <= 4096));
    let all: String = stored
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let mut at = 0;
    for i in 0..150 {
        let needle = format!("Paragraph {i}: 😀🎉 多语言文本测试 & <tags> bold text.");
        let found = all[at..]
            .find(&needle)
            .unwrap_or_else(|| panic!("paragraph {i} missing or out of order"));
        at += found + needle.len();
    }
    assert_eq!(
        fake.calls_to("SendMessage")
            .iter()
            .filter(|c| !c.ok)
            .count(),
        0
    );
    r.stop().await;
}

/// Paragraphs each followed by a short list, as many as fit in `max` units
/// of Markdown: every list gains a blank line once rendered.
fn dense_lists(max: usize) -> (String, usize) {
    let mut md = String::new();
    for i in 0.. {
        let block = format!("Step {i} of the plan\n- check {i}\n- fix {i}\n\n");
        if measure(&md, LengthUnit::Utf16) + measure(&block, LengthUnit::Utf16) > max {
            return (md, i);
        }
        md.push_str(&block);
    }
    unreachable!()
}

#[tokio::test]
async fn answers_that_render_longer_than_their_markdown_are_delivered_whole() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(945, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    let r = Running::start(config(&fake, dir.path())).await;
    let chat = addr(945, None);

    // Just under the limit in Markdown, over it once rendered.
    let (md, blocks) = dense_lists(4096);
    assert!(measure(&md, LengthUnit::Utf16) > 4000);
    assert_eq!(
        chunk_markdown(&md, 4096, LengthUnit::Utf16).len(),
        1,
        "one chunk to the core"
    );
    let first = r
        .adapter
        .send(&chat, OutgoingMessage::text(md.clone()))
        .await
        .unwrap();
    // And three times that, chunked by the core the usual way.
    let (long, long_blocks) = dense_lists(3 * 4096);
    for chunk in chunk_markdown(&long, 4096, LengthUnit::Utf16) {
        r.adapter
            .send(&chat, OutgoingMessage::text(chunk))
            .await
            .unwrap();
    }

    let sends = fake.calls_to("SendMessage");
    assert!(sends.iter().all(|c| c.ok), "every message accepted");
    assert!(sends.iter().all(|c| c.params["parse_mode"] == "HTML"));
    let stored = fake.bot_messages(945);
    assert!(stored.len() > 1 + 3, "cut again: {} messages", stored.len());
    assert!(stored.iter().all(|m| m.text.encode_utf16().count() <= 4096));
    assert!(first.id.0 >= 2, "the first answer went out in two messages");
    let last_block = format!("fix {}", blocks - 1);
    assert!(
        fake.stored(945, first.id.0)
            .unwrap()
            .text
            .ends_with(&last_block),
        "send returns the message with the last piece"
    );
    let all = stored
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut at = 0;
    for i in (0..blocks).chain(0..long_blocks) {
        let needle = format!("Step {i} of the plan\n\n• check {i}\n• fix {i}");
        let found = all[at..].find(&needle);
        assert!(found.is_some(), "block {i} missing or out of order");
        at += found.unwrap() + needle.len();
    }
    assert!(at > 0);
    r.stop().await;
}

#[tokio::test]
async fn an_edit_that_renders_too_long_goes_in_as_plain_text() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(946, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    let r = Running::start(config(&fake, dir.path())).await;
    let draft = r
        .adapter
        .send(&addr(946, None), OutgoingMessage::text("thinking…"))
        .await
        .unwrap();
    let (md, _) = dense_lists(4096);
    r.adapter
        .edit(&draft, OutgoingMessage::text(md.clone()))
        .await
        .unwrap();
    let m = fake.stored(946, draft.id.0).unwrap();
    assert_eq!(m.parse_mode, None);
    assert_eq!(m.text.trim_end(), md.trim_end());
    assert!(fake.calls_to("EditMessageText").iter().all(|c| c.ok));
    r.stop().await;
}

#[tokio::test]
async fn the_fake_counts_text_after_entity_parsing() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let ann = FakeUser::new(947, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    let send = |text: String| {
        raw_call(
            &fake,
            "SendMessage",
            serde_json::json!({"chat_id": 947, "text": text, "parse_mode": "HTML"}),
        )
    };
    // 16,384 bytes of HTML, 4,096 units of text: accepted.
    let (status, body) = send("&lt;".repeat(4096)).await;
    assert_eq!(status, 200, "{body}");
    // Tags do not count, but one unit over the limit is refused.
    let (status, body) = send(format!("<b>{}</b>&amp;", "😀".repeat(2048))).await;
    assert_eq!(status, 400);
    assert_eq!(body["description"], "Bad Request: message is too long");
}

#[tokio::test]
async fn a_429_storm_on_one_chat_does_not_stop_another() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ann, bob) = (FakeUser::new(950, "Ann"), FakeUser::new(951, "Bob"));
    fake.ensure_chat(Where::Dm, &ann);
    fake.ensure_chat(Where::Dm, &bob);
    let r = Running::start(config(&fake, dir.path())).await;
    fake.fail_with_429(950, 2, 1);

    let stormy = {
        let a = r.adapter.clone();
        tokio::spawn(async move {
            for i in 0..4 {
                a.send(
                    &addr(950, None),
                    OutgoingMessage::text(format!("chunk {i}")),
                )
                .await
                .unwrap();
            }
        })
    };
    // Wait until the storm has hit, then talk to the other chat.
    assert!(
        fake.wait_until(WAIT, |f| f.rate_limited_responses() >= 1)
            .await
    );
    for i in 0..3 {
        r.adapter
            .send(&addr(951, None), OutgoingMessage::text(format!("calm {i}")))
            .await
            .unwrap();
    }
    tokio::time::timeout(WAIT * 2, stormy)
        .await
        .unwrap()
        .unwrap();

    let texts = |chat| {
        fake.bot_messages(chat)
            .into_iter()
            .map(|m| m.text)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        texts(950),
        ["chunk 0", "chunk 1", "chunk 2", "chunk 3"],
        "each once, in order"
    );
    assert_eq!(texts(951), ["calm 0", "calm 1", "calm 2"]);
    let sends = fake.calls_to("SendMessage");
    let first_stormy_ok = sends
        .iter()
        .position(|c| c.ok && c.params["chat_id"] == 950)
        .unwrap();
    let last_calm = sends
        .iter()
        .rposition(|c| c.params["chat_id"] == 951)
        .unwrap();
    assert!(
        first_stormy_ok > last_calm,
        "the calm chat flowed while the stormy one waited"
    );
    assert_eq!(fake.rate_limited_responses(), 2);
    assert_eq!(r.adapter.rate_limited_count(), 2);
    r.stop().await;
}

#[tokio::test]
async fn typing_repeats_until_the_last_turn_in_the_chat_is_idle() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(985, "Ann");
    fake.ensure_chat(
        Where::Topic {
            chat: -4001,
            thread: 9,
        },
        &ann,
    );
    let mut cfg = config(&fake, dir.path());
    cfg.typing_interval = Duration::from_millis(30);
    let r = Running::start(cfg).await;
    let chat = addr(-4001, Some(9));
    r.adapter.activity(&chat, Activity::Typing).await.unwrap();
    r.adapter.activity(&chat, Activity::Typing).await.unwrap();
    assert!(
        fake.wait_until(WAIT, |f| f.calls_to("SendChatAction").len() >= 3)
            .await
    );
    // Two turns in the topic (one loop): the first ending keeps it going.
    r.adapter.activity(&chat, Activity::Idle).await.unwrap();
    let before = fake.calls_to("SendChatAction").len();
    assert!(
        fake.wait_until(WAIT, |f| f.calls_to("SendChatAction").len() > before)
            .await,
        "still typing for the other turn"
    );
    // A command's answer in between ends no turn.
    r.adapter.activity(&chat, Activity::Answered).await.unwrap();
    let before = fake.calls_to("SendChatAction").len();
    assert!(
        fake.wait_until(WAIT, |f| f.calls_to("SendChatAction").len() > before)
            .await
    );
    r.adapter.activity(&chat, Activity::Idle).await.unwrap();
    let actions = fake.calls_to("SendChatAction");
    assert!(actions
        .iter()
        .all(|c| c.params["action"] == "typing" && c.params["message_thread_id"] == 9));
    // Settled: no loop keeps running after Idle.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let settled = fake.calls_to("SendChatAction").len();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fake.calls_to("SendChatAction").len(), settled);
    r.stop().await;
}

#[tokio::test]
async fn the_token_never_appears_in_errors() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wrong = "7000001:WRONGtokenVALUE_that-must-not-leak";
    let mut cfg = config(&fake, dir.path());
    cfg.token = Secret::new(wrong);
    let err = TelegramAdapter::connect(cfg)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("rejected the bot token"), "{err}");
    assert!(!err.contains("WRONGtoken"), "{err}");

    // Nothing listens here: reqwest's error names the URL, token included.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut cfg = config(&fake, dir.path());
    cfg.api_url = Some(format!("http://127.0.0.1:{port}/").parse().unwrap());
    let err = TelegramAdapter::connect(cfg)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("cannot reach"), "{err}");
    assert!(!err.contains("AAtestTOKENsecret"), "{err}");

    let r = Running::start(config(&fake, dir.path())).await;
    let err = r
        .adapter
        .send(&addr(123_456_789, None), OutgoingMessage::text("hi"))
        .await
        .unwrap_err();
    assert!(matches!(err, PlatformError::NotFound), "{err:?}");
    let err = r
        .adapter
        .edit(
            &switchboard_platform::MessageRef {
                chat: addr(123_456_789, None),
                id: MessageId(1),
            },
            OutgoingMessage::text("x"),
        )
        .await
        .unwrap_err();
    assert!(!format!("{err} {err:?}").contains("AAtestTOKENsecret"));
    r.stop().await;
}

#[tokio::test]
async fn a_group_upgraded_to_a_supergroup_is_followed() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(990, "Ann");
    let old = fake.ensure_chat(Where::Group(-4100), &ann);
    let r = Running::start(config(&fake, dir.path())).await;
    let new = -1_004_100;
    fake.upgrade_to_supergroup(old, new);

    // A task notification for the old group reaches the new supergroup.
    let sent = r
        .adapter
        .send(&addr(old, None), OutgoingMessage::text("task done"))
        .await
        .unwrap();
    assert_eq!(
        sent.chat.chat,
        ChatId(new),
        "the reference names the new chat"
    );
    let texts: Vec<_> = fake.bot_messages(new).into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["task done"]);
    // Later messages for the old id go straight there; edits follow the reference.
    r.adapter
        .send(&addr(old, None), OutgoingMessage::text("second"))
        .await
        .unwrap();
    r.adapter
        .edit(&sent, OutgoingMessage::text("task done (edited)"))
        .await
        .unwrap();
    let sends = fake.calls_to("SendMessage");
    assert_eq!(sends.len(), 3, "one refused by the old group, then two");
    assert_eq!(sends[0].params["chat_id"], old);
    assert!(sends[1..].iter().all(|c| c.params["chat_id"] == new));
    let texts: Vec<_> = fake.bot_messages(new).into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["task done (edited)", "second"]);
    r.stop().await;
}

#[tokio::test]
async fn a_press_still_unanswered_at_shutdown_is_told_to_press_again() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(995, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    let mut r = Running::start(config(&fake, dir.path())).await;
    let sent = r
        .adapter
        .send(&addr(995, None), card("card", &["ok:1"]))
        .await
        .unwrap();
    fake.callback(Where::Dm, &ann, sent.id.0, "ok:1");
    r.next_press().await;
    // The core never answers it: the adapter stops first.
    r.stop().await;
    assert!(
        fake.wait_until(WAIT, |f| f.calls_to("AnswerCallbackQuery").len() == 1)
            .await
    );
    let answer = &fake.calls_to("AnswerCallbackQuery")[0];
    assert!(
        answer.params["text"]
            .as_str()
            .is_some_and(|t| t.contains("press again")),
        "{answer:?}"
    );
}
