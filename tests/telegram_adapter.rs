//! The Telegram adapter driven directly against the fake Bot API: inbound
//! normalization, presses, rendering, chunking, flood control, offsets,
//! webhook mode and secret hygiene.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::fake_telegram::{post_webhook, FakeTelegram, FakeUser, Where, BOT_ID, TOKEN};
use switchboard_platform::{
    chunk_markdown, measure, ActionId, Activity, Addressed, Button, ButtonPress, ButtonStyle,
    ChatAddress, ChatId, ChatKind, Inbound, InboundMessage, LengthUnit, MessageId, OutgoingMessage,
    Platform, PlatformAdapter, PlatformError, PressAnswer, Quota, Secret, ThreadId,
};
use switchboard_telegram::{TelegramAdapter, TelegramConfig, TelegramLimits, WebhookConfig};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

/// Fast quotas keep these tests quick; they run against a fake without flood
/// limits (flood control is tested in `telegram_limits.rs`).
fn fast_limits() -> TelegramLimits {
    let per_second = |n| Quota::per_second(NonZeroU32::new(n).unwrap());
    TelegramLimits {
        per_chat: per_second(200),
        per_group: per_second(100_000),
        per_bot: per_second(2_000),
    }
}

fn config(fake: &FakeTelegram, dir: &Path) -> TelegramConfig {
    let mut c = TelegramConfig::new(Secret::new(TOKEN), dir);
    c.api_url = Some(fake.api_url().parse().unwrap());
    c.poll_timeout_secs = 1;
    c.limits = fast_limits();
    c.press_answer_timeout = Duration::from_secs(30);
    c.approvers.insert(900);
    c
}

struct Running {
    adapter: Arc<TelegramAdapter>,
    rx: mpsc::Receiver<Inbound>,
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), PlatformError>>,
}

impl Running {
    async fn start(config: TelegramConfig) -> Running {
        let adapter = Arc::new(TelegramAdapter::connect(config).await.unwrap());
        let (tx, rx) = mpsc::channel(64);
        let shutdown = CancellationToken::new();
        let (a, s) = (adapter.clone(), shutdown.clone());
        let task = tokio::spawn(async move { a.run(tx, s).await });
        Running {
            adapter,
            rx,
            shutdown,
            task,
        }
    }

    async fn next(&mut self) -> Inbound {
        tokio::time::timeout(WAIT, self.rx.recv())
            .await
            .expect("timed out waiting for an inbound event")
            .expect("adapter closed the sink")
    }

    async fn next_message(&mut self) -> InboundMessage {
        match self.next().await {
            Inbound::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    async fn next_press(&mut self) -> ButtonPress {
        match self.next().await {
            Inbound::ButtonPress(p) => p,
            other => panic!("expected a press, got {other:?}"),
        }
    }

    async fn stop(self) -> mpsc::Receiver<Inbound> {
        self.shutdown.cancel();
        let ended = tokio::time::timeout(WAIT, self.task).await;
        assert!(
            matches!(ended, Ok(Ok(Ok(())))),
            "run did not end cleanly: {ended:?}"
        );
        self.rx
    }
}

fn addr(chat: i64, thread: Option<i64>) -> ChatAddress {
    ChatAddress::new(Platform::Telegram, ChatId(chat), thread.map(ThreadId))
}

fn card(text: &str, ids: &[&str]) -> OutgoingMessage {
    let row = ids
        .iter()
        .map(|id| Button {
            label: format!("Do {id}"),
            action: ActionId::parse(id).unwrap(),
            style: ButtonStyle::Primary,
            shortcut: None,
        })
        .collect();
    OutgoingMessage::text(text).with_buttons(vec![row])
}

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
    assert_eq!(m.attachments[0].kind, "photo");

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
    assert_eq!(photo.attachments[0].kind, "photo");
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
async fn malformed_updates_and_unknown_callbacks_leave_the_poller_running() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(960, "Ann");
    let mut r = Running::start(config(&fake, dir.path())).await;
    fake.push_raw(serde_json::json!({"message": {"garbage": true}}));
    fake.push_raw(serde_json::json!({"message": "not even an object"}));
    fake.push_raw(serde_json::json!({"callback_query": {"id": "x", "from": 5}}));
    fake.push_raw(serde_json::json!({"surprise_update_kind": {"a": 1}}));
    fake.ensure_chat(Where::Dm, &ann);
    let sent = r
        .adapter
        .send(&addr(960, None), card("card", &["ok:1"]))
        .await
        .unwrap();
    fake.callback(Where::Dm, &ann, sent.id.0, "\u{1F600} not ascii");
    fake.message(Where::Dm, &ann, "still there?");
    assert_eq!(r.next_message().await.text, "still there?");
    assert!(
        fake.wait_until(WAIT, |f| f.calls_to("AnswerCallbackQuery").len() == 1)
            .await
    );
    assert!(!r.task.is_finished());
    assert!(
        fake.wait_until(WAIT, |f| f.pending_updates() == 0).await,
        "offset moved past them"
    );
    r.stop().await;
}

#[tokio::test]
async fn offset_persists_across_restarts() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(970, "Ann");
    let mut first = Running::start(config(&fake, dir.path())).await;
    let old: Vec<_> = (0..3)
        .map(|i| fake.message(Where::Dm, &ann, &format!("old {i}")))
        .collect();
    for i in 0..3 {
        assert_eq!(first.next_message().await.text, format!("old {i}"));
    }
    first.stop().await;
    let saved =
        std::fs::read_to_string(dir.path().join(format!("telegram-offset-{BOT_ID}"))).unwrap();
    assert_eq!(saved.trim(), old[2].update_id.to_string());

    // Telegram may still hold the old updates (unconfirmed) next to new ones.
    for (i, p) in old.iter().enumerate() {
        let mut u = fake.message_update(Where::Dm, &ann, &format!("old {i}"));
        u["update_id"] = p.update_id.into();
        fake.push_raw(u);
    }
    fake.message(Where::Dm, &ann, "new 0");
    fake.message(Where::Dm, &ann, "new 1");
    let mut second = Running::start(config(&fake, dir.path())).await;
    assert_eq!(second.next_message().await.text, "new 0");
    assert_eq!(second.next_message().await.text, "new 1");
    let mut rx = second.stop().await;
    assert!(rx.try_recv().is_err(), "nothing re-delivered");
}

#[tokio::test]
async fn a_restarted_update_id_sequence_is_followed() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(975, "Ann");
    let offset_file = dir.path().join(format!("telegram-offset-{BOT_ID}"));
    let mut r = Running::start(config(&fake, dir.path())).await;
    let before: Vec<_> = (0..3)
        .map(|i| fake.message(Where::Dm, &ann, &format!("before {i}")))
        .collect();
    for i in 0..3 {
        assert_eq!(r.next_message().await.text, format!("before {i}"));
    }
    assert!(fake.wait_until(WAIT, |f| f.pending_updates() == 0).await);
    let polls_before = fake.calls_to("GetUpdates").len();

    // A week without updates later, Telegram numbers them from a new random
    // start, far below the offset the poller holds.
    fake.restart_update_ids(5_000);
    let after: Vec<_> = (0..3)
        .map(|i| fake.message(Where::Dm, &ann, &format!("after {i}")))
        .collect();
    assert!(after[0].update_id < before[2].update_id);
    for i in 0..3 {
        assert_eq!(r.next_message().await.text, format!("after {i}"));
    }
    let later = fake.message(Where::Dm, &ann, "later");
    assert_eq!(r.next_message().await.text, "later");
    assert!(
        fake.wait_until(WAIT, |f| f.pending_updates() == 0).await,
        "an offset from the new sequence confirmed them"
    );
    // Each answer is followed by one more long poll (1 s here), no tight loop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let polls = fake.calls_to("GetUpdates").len() - polls_before;
    assert!(polls <= 12, "{polls} getUpdates calls: the poller spins");
    let saved = std::fs::read_to_string(&offset_file).unwrap();
    assert_eq!(saved.trim(), later.update_id.to_string());
    let mut rx = r.stop().await;
    assert!(rx.try_recv().is_err(), "nothing forwarded twice");

    // After a restart the persisted offset belongs to the new sequence.
    let mut second = Running::start(config(&fake, dir.path())).await;
    fake.message(Where::Dm, &ann, "after the restart");
    assert_eq!(second.next_message().await.text, "after the restart");
    let mut rx = second.stop().await;
    assert!(rx.try_recv().is_err(), "nothing re-delivered");
}

#[tokio::test]
async fn the_fake_follows_the_bot_apis_offset_rules() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let ann = FakeUser::new(976, "Ann");
    let ids = |body: &serde_json::Value| -> Vec<i64> {
        body["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["update_id"].as_i64().unwrap())
            .collect()
    };
    let poll = |offset: i64| raw_call(&fake, "GetUpdates", serde_json::json!({"offset": offset}));
    let a = fake.message(Where::Dm, &ann, "a").update_id;
    let b = fake.message(Where::Dm, &ann, "b").update_id;
    assert_eq!(ids(&poll(0).await.1), [a, b], "0: from the oldest");
    assert_eq!(ids(&poll(a + 1).await.1), [b], "confirms a");
    assert_eq!(ids(&poll(0).await.1), [b], "a is gone");
    assert_eq!(ids(&poll(b + 1).await.1), Vec::<i64>::new());

    fake.restart_update_ids(70);
    let c = fake.message(Where::Dm, &ann, "c").update_id;
    assert_eq!(c, 70);
    // An offset from the old sequence is past the queue's end: Telegram answers
    // from the oldest update and confirms nothing, however often it is asked.
    assert_eq!(ids(&poll(b + 1).await.1), [c]);
    assert_eq!(ids(&poll(b + 1).await.1), [c]);
    assert_eq!(fake.pending_updates(), 1);
    // Up to 10 past the next id still counts as an offset (and confirms).
    assert_eq!(ids(&poll(c + 1).await.1), Vec::<i64>::new());
    assert_eq!(fake.pending_updates(), 0);
}

#[tokio::test]
async fn webhook_mode_checks_the_secret() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(980, "Ann");
    let mut cfg = config(&fake, dir.path());
    cfg.webhook = Some(WebhookConfig {
        url: "https://bot.example.test/tg/hook".parse().unwrap(),
        listen: "127.0.0.1:0".parse().unwrap(),
        secret: Secret::new("right-secret_1"),
    });
    let mut r = Running::start(cfg).await;
    let local = tokio::time::timeout(WAIT, r.adapter.webhook_addr())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        fake.webhook(),
        Some((
            "https://bot.example.test/tg/hook".to_owned(),
            Some("right-secret_1".to_owned())
        ))
    );
    let url = format!("http://{local}/tg/hook");
    let update = |text: &str| {
        let mut u = fake.message_update(Where::Dm, &ann, text);
        u["update_id"] = 1.into();
        u.to_string()
    };
    assert_eq!(
        post_webhook(&url, Some("wrong-secret"), update("forged"))
            .await
            .unwrap(),
        401
    );
    assert_eq!(
        post_webhook(&url, None, update("no secret")).await.unwrap(),
        401
    );
    assert_eq!(
        post_webhook(&url, Some("right-secret_1"), "{not json".into())
            .await
            .unwrap(),
        200
    );
    assert_eq!(
        post_webhook(&url, Some("right-secret_1"), update("genuine"))
            .await
            .unwrap(),
        200
    );
    assert_eq!(
        r.next_message().await.text,
        "genuine",
        "nothing forged got through"
    );
    r.stop().await;
    assert!(fake.calls_to("GetUpdates").is_empty());
}

/// Posts a Bot API call straight to the fake; returns (HTTP status, body).
async fn raw_call(
    fake: &FakeTelegram,
    method: &str,
    params: serde_json::Value,
) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .post(format!("{}bot{TOKEN}/{method}", fake.api_url()))
        .json(&params)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn the_fake_refuses_webhooks_telegram_would_refuse() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    for (url, why) in [
        (
            "http://bot.example.test/tg",
            "An HTTPS URL must be provided",
        ),
        (
            "https://bot.example.test:8080/tg",
            "ports 80, 88, 443 or 8443",
        ),
        ("not a url", "invalid URL"),
    ] {
        let (status, body) = raw_call(&fake, "SetWebhook", serde_json::json!({"url": url})).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert!(
            body["description"].as_str().unwrap().contains(why),
            "{url}: {body}"
        );
    }
    assert_eq!(fake.webhook(), None);
    for url in [
        "https://bot.example.test/tg",
        "https://bot.example.test:88/tg",
        "https://bot.example.test:8443/tg",
    ] {
        let (status, body) = raw_call(&fake, "SetWebhook", serde_json::json!({"url": url})).await;
        assert_eq!(status, 200, "{url}: {body}");
    }
    assert_eq!(
        fake.webhook(),
        Some(("https://bot.example.test:8443/tg".to_owned(), None))
    );
}

#[tokio::test]
async fn the_fake_honours_allowed_updates() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(990, "Ann");
    let chat = serde_json::json!({"id": 990, "type": "private", "first_name": "Ann"});
    // Before any `allowed_updates`: everything but chat members and reactions.
    fake.push_raw(serde_json::json!({"chat_member": {"chat": chat, "date": 0}}));
    fake.push_raw(serde_json::json!({"message_reaction": {"chat": chat, "message_id": 1}}));
    let first = fake.message(Where::Dm, &ann, "first");
    fake.edited(Where::Dm, &ann, first.message_id, "first, edited early");
    assert_eq!((fake.filtered_updates(), fake.pending_updates()), (2, 2));

    let mut r = Running::start(config(&fake, dir.path())).await;
    assert_eq!(r.next_message().await.text, "first");
    let asked = fake.calls_to("GetUpdates")[0].params["allowed_updates"].clone();
    assert_eq!(asked, serde_json::json!(["message", "callback_query"]));
    // From now on Telegram creates only those kinds.
    fake.edited(Where::Dm, &ann, first.message_id, "first, edited late");
    fake.push_raw(serde_json::json!({"my_chat_member": {"chat": chat, "date": 0}}));
    fake.message(Where::Dm, &ann, "second");
    assert_eq!(r.next_message().await.text, "second");
    assert_eq!(fake.filtered_updates(), 4);
    r.stop().await;
}

#[tokio::test]
async fn typing_repeats_until_idle() {
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
