//! Flood control against a fake Bot API that enforces Telegram's limits itself
//! (sliding windows, no burst, no tolerance): the fake refuses the call past
//! each window, and the adapter's quotas never make it refuse one. Windows are
//! scaled down so the tests cross them in seconds; no test asserts wall time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::fake_telegram::{
    FakeOptions, FakeTelegram, FakeUser, PublishedLimits, SlidingWindow, Where, Window, TOKEN,
};
use support::telegram_run::raw_call as call;
use switchboard_platform::{
    ChatAddress, ChatId, OutgoingMessage, Pacer, Platform, PlatformAdapter, Secret,
};
use switchboard_telegram::{TelegramAdapter, TelegramConfig, TelegramLimits};
use tokio::time::Instant;

/// Jitter allowance of the scaled-down quotas: generous, since these windows
/// are short and the machine may be busy; a loose limiter overshoots by far more.
const MARGIN: Duration = Duration::from_millis(100);

async fn strict_fake(limits: PublishedLimits) -> FakeTelegram {
    FakeTelegram::start_with(FakeOptions {
        enforce_limits: Some(limits),
        ..FakeOptions::default()
    })
    .await
    .unwrap()
}

async fn adapter(fake: &FakeTelegram, dir: &Path, limits: TelegramLimits) -> TelegramAdapter {
    let mut config = TelegramConfig::new(Secret::new(TOKEN), dir);
    config.api_url = Some(fake.api_url().parse().unwrap());
    config.limits = limits;
    TelegramAdapter::connect(config).await.unwrap()
}

fn addr(chat: i64) -> ChatAddress {
    ChatAddress::new(Platform::Telegram, ChatId(chat), None)
}

fn texts(fake: &FakeTelegram, chat: i64) -> Vec<String> {
    fake.bot_messages(chat)
        .into_iter()
        .map(|m| m.text)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_fake_counts_a_sliding_window_without_burst_or_tolerance() {
    let mut w = SlidingWindow::new(Window::new(3, Duration::from_secs(10)));
    let start = Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    for ms in [0, 1_000, 2_000] {
        assert_eq!(w.wait(at(ms)), Duration::ZERO);
        w.record(at(ms));
    }
    // The 4th call in the window waits until the call at 0 leaves it...
    assert_eq!(w.wait(at(9_999)), Duration::from_millis(1));
    // ...which is exactly 10 s later: windows are half-open.
    assert_eq!(w.wait(at(10_000)), Duration::ZERO);
    w.record(at(10_000));
    assert_eq!(w.wait(at(10_500)), Duration::from_millis(500));
    // After a quiet spell only `limit` calls fit, not a bucket's worth more.
    for ms in [60_000, 60_001, 60_002] {
        assert_eq!(w.wait(at(ms)), Duration::ZERO);
        w.record(at(ms));
    }
    assert_eq!(w.wait(at(60_003)), Duration::from_millis(9_997));
}

#[tokio::test]
async fn the_fake_refuses_the_message_past_the_chat_and_bot_windows() {
    let fake = strict_fake(PublishedLimits {
        per_chat: Window::new(1, Duration::from_secs(60)),
        per_group: Window::new(3, Duration::from_secs(60)),
        per_bot: Window::new(6, Duration::from_secs(60)),
    })
    .await;
    let ann = FakeUser::new(700, "Ann");
    let bob = FakeUser::new(701, "Bob");
    fake.ensure_chat(Where::Dm, &ann);
    fake.ensure_chat(Where::Dm, &bob);
    fake.ensure_chat(Where::Group(-7001), &ann);
    fake.ensure_chat(Where::Group(-7002), &ann);
    let send = |chat: i64, text: &str| json!({"chat_id": chat, "text": text});

    // Per chat: the second message to a private chat within its window.
    let (status, first) = call(&fake, "SendMessage", send(700, "one")).await;
    assert_eq!(status, 200);
    let (status, body) = call(&fake, "SendMessage", send(700, "two")).await;
    assert_eq!(status, 429);
    assert_eq!(body["ok"], false);
    assert_eq!(body["error_code"], 429);
    let retry_after = body["parameters"]["retry_after"].as_u64().unwrap();
    assert!((59..=60).contains(&retry_after), "{body}");
    assert_eq!(
        body["description"],
        format!("Too Many Requests: retry after {retry_after}")
    );
    // Edits count like sends (Telegram's flood control counts both).
    let edit = json!({"chat_id": 700, "message_id": first["result"]["message_id"], "text": "one!"});
    assert_eq!(call(&fake, "EditMessageText", edit).await.0, 429);

    // Groups are chats too: their chat window applies as well (the group
    // window itself is crossed in the next test).
    assert_eq!(call(&fake, "SendMessage", send(-7001, "g1")).await.0, 200);
    assert_eq!(call(&fake, "SendMessage", send(-7001, "g2")).await.0, 429);
    assert_eq!(call(&fake, "SendMessage", send(701, "b1")).await.0, 200);
    assert_eq!(call(&fake, "SendMessage", send(-7002, "h1")).await.0, 200);
    // Bot: 4 accepted so far (700, -7001, 701, -7002); a fresh chat gets two more.
    let carl = FakeUser::new(702, "Carl");
    let dora = FakeUser::new(703, "Dora");
    let emil = FakeUser::new(704, "Emil");
    for u in [&carl, &dora, &emil] {
        fake.ensure_chat(Where::Dm, u);
    }
    assert_eq!(call(&fake, "SendMessage", send(702, "c")).await.0, 200);
    assert_eq!(call(&fake, "SendMessage", send(703, "d")).await.0, 200);
    let (status, body) = call(&fake, "SendMessage", send(704, "e")).await;
    assert_eq!(
        status, 429,
        "the 7th message of the bot within 60 s: {body}"
    );
    let hits = fake.limit_hits();
    assert_eq!(hits.get("per chat"), Some(&3));
    assert_eq!(hits.get("per bot"), Some(&1));
    assert_eq!(fake.rate_limited_responses(), 4);
    assert_eq!(texts(&fake, 704), Vec::<String>::new(), "nothing stored");
}

#[tokio::test]
async fn the_fake_refuses_the_21st_group_message_in_a_minute() {
    // Telegram's group window; the per-chat window lifted so only it binds.
    let fake = strict_fake(PublishedLimits {
        per_chat: Window::new(1_000, Duration::from_secs(1)),
        ..PublishedLimits::default()
    })
    .await;
    let ann = FakeUser::new(710, "Ann");
    fake.ensure_chat(Where::Group(-7101), &ann);
    fake.ensure_chat(Where::Dm, &ann);
    for i in 0..20 {
        let (status, body) = call(
            &fake,
            "SendMessage",
            json!({"chat_id": -7101, "text": format!("m{i}")}),
        )
        .await;
        assert_eq!(status, 200, "message {i}: {body}");
    }
    let (status, body) = call(
        &fake,
        "SendMessage",
        json!({"chat_id": -7101, "text": "m20"}),
    )
    .await;
    assert_eq!(status, 429);
    assert!(body["parameters"]["retry_after"].as_u64().unwrap() >= 59);
    assert_eq!(fake.limit_hits().get("per group"), Some(&1));
    // A private chat is not a group: only the chat and bot windows apply.
    assert_eq!(
        call(&fake, "SendMessage", json!({"chat_id": 710, "text": "dm"}))
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn a_busy_group_gets_every_message_in_order_without_a_429() {
    // 5 per second in a group binds long before 1 per 10 ms in a chat does.
    let fake_limits = PublishedLimits {
        per_chat: Window::new(1, Duration::from_millis(10)),
        per_group: Window::new(5, Duration::from_secs(1)),
        per_bot: Window::new(30, Duration::from_millis(100)),
    };
    let fake = strict_fake(fake_limits).await;
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(720, "Ann");
    fake.ensure_chat(Where::Group(-7201), &ann);
    let ours = TelegramLimits {
        per_chat: Pacer::quota_within(1, Duration::from_millis(10), 1, MARGIN / 2),
        per_group: Pacer::quota_within(5, Duration::from_secs(1), 2, MARGIN),
        per_bot: Pacer::quota_within(30, Duration::from_millis(100), 3, MARGIN),
    };
    let adapter = Arc::new(adapter(&fake, dir.path(), ours).await);
    // All queued at once, as a long chunked answer plus its edits would be.
    let expected: Vec<String> = (0..12).map(|i| format!("part {i}")).collect();
    let mut tasks = Vec::new();
    for text in &expected {
        let (adapter, text) = (adapter.clone(), text.clone());
        tasks.push(tokio::spawn(async move {
            adapter
                .send(&addr(-7201), OutgoingMessage::text(text))
                .await
        }));
        // Queue in this order (the pacer is FIFO per chat).
        tokio::task::yield_now().await;
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(texts(&fake, -7201), expected, "each once, in order");
    assert_eq!(fake.rate_limited_responses(), 0, "{:?}", fake.limit_hits());
    assert_eq!(adapter.rate_limited_count(), 0);
    // The waits reach the adapter's histogram (`switchboard_pacer_wait_seconds`):
    // the last part queued behind a full group window.
    let waits = adapter.pacer_waits().expect("a paced adapter");
    assert!(waits.count >= 12, "{waits:?}");
    let long: u64 = waits
        .buckets
        .iter()
        .filter(|(le, _)| *le > 0.64)
        .map(|(_, n)| n)
        .sum();
    assert!(long >= 1, "{waits:?}");
    // More than the group window holds were sent: the window really bound.
    let sends = fake.calls_to("SendMessage");
    assert_eq!(sends.len(), 12);
    let span = sends[11].at.duration_since(sends[0].at);
    assert!(
        span >= Duration::from_secs(1),
        "12 > 5 per second: {span:?}"
    );
}

#[tokio::test]
async fn many_chats_at_once_stay_within_the_bot_wide_window() {
    // Telegram's limits ten times faster, on the fake and in our quotas.
    let fake = strict_fake(PublishedLimits::scaled_down(10)).await;
    let dir = tempfile::tempdir().unwrap();
    let users: Vec<FakeUser> = (0..40).map(|i| FakeUser::new(7300 + i, "U")).collect();
    for u in &users {
        fake.ensure_chat(Where::Dm, u);
    }
    let adapter =
        Arc::new(adapter(&fake, dir.path(), TelegramLimits::scaled_down(10, MARGIN)).await);
    let mut tasks = Vec::new();
    for u in &users {
        let (adapter, chat) = (adapter.clone(), u.id);
        tasks.push(tokio::spawn(async move {
            for i in 0..2 {
                adapter
                    .send(&addr(chat), OutgoingMessage::text(format!("{chat}-{i}")))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for u in &users {
        assert_eq!(
            texts(&fake, u.id),
            [format!("{}-0", u.id), format!("{}-1", u.id)]
        );
    }
    assert_eq!(fake.rate_limited_responses(), 0, "{:?}", fake.limit_hits());
    assert_eq!(adapter.rate_limited_count(), 0);
}

#[tokio::test]
async fn the_default_quotas_pass_telegrams_real_limits() {
    let fake = strict_fake(PublishedLimits::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(740, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    fake.ensure_chat(Where::Group(-7401), &ann);
    let adapter = adapter(&fake, dir.path(), TelegramLimits::default()).await;
    for i in 0..3 {
        let dm = adapter
            .send(&addr(740), OutgoingMessage::text(format!("dm {i}")))
            .await
            .unwrap();
        adapter
            .edit(&dm, OutgoingMessage::text(format!("dm {i}, edited")))
            .await
            .unwrap();
        adapter
            .send(&addr(-7401), OutgoingMessage::text(format!("group {i}")))
            .await
            .unwrap();
    }
    assert_eq!(
        texts(&fake, 740),
        ["dm 0, edited", "dm 1, edited", "dm 2, edited"]
    );
    assert_eq!(texts(&fake, -7401), ["group 0", "group 1", "group 2"]);
    assert_eq!(fake.rate_limited_responses(), 0, "{:?}", fake.limit_hits());
    assert_eq!(adapter.rate_limited_count(), 0);
}
