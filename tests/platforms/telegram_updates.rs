//! How the Telegram adapter receives updates, against the fake Bot API:
//! malformed updates, offsets across restarts and a restarted update_id
//! sequence, webhook mode and its secret, and the fake's own Bot API rules.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;
use support::fake_telegram::{post_webhook, FakeTelegram, FakeUser, Where, BOT_ID};
use support::telegram_run::{addr, card, config, raw_call, Running, WAIT};
use switchboard_platform::{PlatformAdapter, Secret};
use switchboard_telegram::WebhookConfig;

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

/// Long polling confirms an update only once the core has it: updates
/// handed over but never acknowledged (a core that died before keeping
/// them) are still Telegram's, and a restart gets them again.
#[tokio::test]
async fn polled_updates_are_confirmed_only_once_the_core_has_them() {
    use switchboard_platform::{Inbound, Receipt};
    use switchboard_telegram::TelegramAdapter;
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(971, "Ann");
    let adapter = std::sync::Arc::new(
        TelegramAdapter::connect(config(&fake, dir.path()))
            .await
            .unwrap(),
    );
    let (tx, mut rx) = support::intake::acking(64);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (a, s) = (adapter.clone(), shutdown.clone());
    let task = tokio::spawn(async move { a.run(tx, s).await });
    for i in 0..5 {
        fake.message(Where::Dm, &ann, &format!("m{i}"));
    }
    // The core keeps the first two; it has the other three in hand, not kept.
    let mut held = Vec::new();
    for i in 0..5 {
        let delivery = tokio::time::timeout(WAIT, rx.recv_unacked())
            .await
            .unwrap()
            .unwrap();
        let Inbound::Message(m) = &delivery.event else {
            panic!("a message")
        };
        assert_eq!(m.text, format!("m{i}"));
        if i < 2 {
            delivery.ack.send(Receipt::Kept);
        } else {
            held.push(delivery);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        fake.pending_updates(),
        5,
        "nothing of the batch is confirmed while part of it has no receipt"
    );
    // The crash.
    task.abort();
    let _ = task.await;
    drop(held);
    drop(rx);

    let mut r = Running::start(config(&fake, dir.path())).await;
    let mut again = Vec::new();
    for _ in 0..5 {
        again.push(r.next_message().await.text);
    }
    assert_eq!(
        again,
        ["m0", "m1", "m2", "m3", "m4"],
        "offered again (the core drops the two it kept as repeats)"
    );
    assert!(
        fake.wait_until(WAIT, |f| f.pending_updates() == 0).await,
        "confirmed once acknowledged"
    );
    r.stop().await;
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
    // Reactions for feedback on answers (`REACTIONS`).
    assert_eq!(
        asked,
        serde_json::json!(["message", "callback_query", "message_reaction"])
    );
    // From now on Telegram creates only those kinds.
    fake.edited(Where::Dm, &ann, first.message_id, "first, edited late");
    fake.push_raw(serde_json::json!({"my_chat_member": {"chat": chat, "date": 0}}));
    fake.message(Where::Dm, &ann, "second");
    assert_eq!(r.next_message().await.text, "second");
    assert_eq!(fake.filtered_updates(), 4);
    r.stop().await;
}

/// Everything any test of this binary logs (tracing and the `log` crate),
/// at trace level: the poisoned-update tests check what reached it.
pub(crate) fn captured_logs() -> &'static std::sync::Mutex<Vec<u8>> {
    use std::sync::{Mutex, OnceLock};
    static LOGS: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Mutex<Vec<u8>> = Box::leak(Box::new(Mutex::new(Vec::new())));
        let writer = move || Capture(logs);
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(writer)
            .try_init();
        logs
    })
}

struct Capture(&'static std::sync::Mutex<Vec<u8>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn logs_text() -> String {
    String::from_utf8_lossy(&captured_logs().lock().unwrap()).into_owned()
}

/// A message update as JSON text (no `update_id`) whose text carries
/// `marker` and then a lone surrogate escape, which no JSON parser accepts.
fn lone_surrogate_update(fake: &FakeTelegram, from: &FakeUser, marker: &str) -> String {
    let mut u = fake.message_update(Where::Dm, from, &format!("{marker} LONE"));
    u.as_object_mut().unwrap().remove("update_id");
    u.to_string().replace(" LONE", " \\ud800 and more")
}

/// A message update nested 200 deep in a field nobody reads (serde_json
/// refuses more than 128 levels anywhere in a document).
fn deeply_nested_update(fake: &FakeTelegram, from: &FakeUser, marker: &str) -> String {
    let mut u = fake.message_update(Where::Dm, from, marker);
    u.as_object_mut().unwrap().remove("update_id");
    u["message"]["via_nowhere"] = "DEEP".into();
    let deep = format!("{}\"{marker}\"{}", "[".repeat(200), "]".repeat(200));
    u.to_string().replace("\"DEEP\"", &deep)
}

#[tokio::test]
async fn a_poisoned_update_is_skipped_and_never_logged() {
    captured_logs();
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(991, "Ann");
    fake.message(Where::Dm, &ann, "before");
    let lone = fake.push_unparsed(&lone_surrogate_update(&fake, &ann, "PRIVATE-lone-7f3a"));
    let deep = fake.push_unparsed(&deeply_nested_update(&fake, &ann, "PRIVATE-deep-9c1e"));
    fake.message(Where::Dm, &ann, "after");

    let mut r = Running::start(config(&fake, dir.path())).await;
    assert_eq!(r.next_message().await.text, "before");
    assert_eq!(r.next_message().await.text, "after", "the batch went on");
    assert!(
        fake.wait_until(WAIT, |f| f.pending_updates() == 0).await,
        "the offset moved past the poisoned updates"
    );
    assert_eq!(r.adapter.skipped_update_count(), 2);
    // What `/metrics` shows as switchboard_inbound_unreadable_total.
    assert_eq!(PlatformAdapter::unreadable_inbound(r.adapter.as_ref()), 2);
    let saved =
        std::fs::read_to_string(dir.path().join(format!("telegram-offset-{BOT_ID}"))).unwrap();
    assert!(saved.trim().parse::<i64>().unwrap() > deep);

    // Later updates keep flowing, and a restart does not bring them back.
    fake.message(Where::Dm, &ann, "later");
    assert_eq!(r.next_message().await.text, "later");
    let mut rx = r.stop().await;
    assert!(rx.try_recv().is_err());
    let mut again = Running::start(config(&fake, dir.path())).await;
    fake.message(Where::Dm, &ann, "after the restart");
    assert_eq!(again.next_message().await.text, "after the restart");
    again.stop().await;

    let logs = logs_text();
    for id in [lone, deep] {
        assert!(
            logs.contains(&format!("update_id={id}")),
            "skipped update {id} recorded by its id"
        );
    }
    for secret in ["PRIVATE-lone", "PRIVATE-deep", "ud800"] {
        assert!(!logs.contains(secret), "{secret} reached the logs");
    }
}

#[tokio::test]
async fn a_poisoned_webhook_update_is_skipped_and_never_logged() {
    captured_logs();
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bob = FakeUser::new(992, "Bob");
    let mut cfg = config(&fake, dir.path());
    cfg.webhook = Some(WebhookConfig {
        url: "https://bot.example.test/tg/hook".parse().unwrap(),
        listen: "127.0.0.1:0".parse().unwrap(),
        secret: Secret::new("hook-secret_2"),
    });
    let mut r = Running::start(cfg).await;
    let local = tokio::time::timeout(WAIT, r.adapter.webhook_addr())
        .await
        .unwrap()
        .unwrap();
    let url = format!("http://{local}/tg/hook");
    let with_id = |id: i64, object: String| format!("{{\"update_id\":{id},{}", &object[1..]);
    let post = |body: String| post_webhook(&url, Some("hook-secret_2"), body);

    let lone = with_id(
        4_001,
        lone_surrogate_update(&fake, &bob, "PRIVATE-hook-lone-2b7d"),
    );
    let deep = with_id(
        4_002,
        deeply_nested_update(&fake, &bob, "PRIVATE-hook-deep-5e0f"),
    );
    // Answered 200: Telegram would otherwise retry them forever.
    assert_eq!(post(lone).await.unwrap(), 200);
    assert_eq!(post(deep).await.unwrap(), 200);
    let mut fine = fake.message_update(Where::Dm, &bob, "genuine");
    fine["update_id"] = 4_003.into();
    assert_eq!(post(fine.to_string()).await.unwrap(), 200);
    assert_eq!(r.next_message().await.text, "genuine");
    assert_eq!(r.adapter.skipped_update_count(), 2);
    r.stop().await;

    let logs = logs_text();
    assert!(logs.contains("update_id=4001") && logs.contains("update_id=4002"));
    for secret in ["PRIVATE-hook", "ud800"] {
        assert!(!logs.contains(secret), "{secret} reached the logs");
    }
}

/// Webhook mode keeps what it acknowledged: deliveries are answered 200 once
/// spooled, leave the spool only once the core has acknowledged them, and
/// those a crashed process had not got a receipt for reach the core after a
/// restart, in order; a malformed body is kept for the operator.
#[tokio::test]
async fn webhook_deliveries_acknowledged_before_a_crash_are_forwarded_after_it() {
    use switchboard_platform::Inbound;
    use switchboard_telegram::TelegramAdapter;
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(981, "Ann");
    let hook_config = || {
        let mut cfg = config(&fake, dir.path());
        cfg.webhook = Some(WebhookConfig {
            url: "https://bot.example.test/tg/hook".parse().unwrap(),
            listen: "127.0.0.1:0".parse().unwrap(),
            secret: Secret::new("spool-secret"),
        });
        cfg
    };
    // A core that takes one message and then stops reading (a process about
    // to crash): the rest wait in the adapter.
    let adapter = std::sync::Arc::new(TelegramAdapter::connect(hook_config()).await.unwrap());
    let (tx, mut rx) = support::intake::acking(1);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (a, s) = (adapter.clone(), shutdown.clone());
    let task = tokio::spawn(async move { a.run(tx, s).await });
    let local = tokio::time::timeout(WAIT, adapter.webhook_addr())
        .await
        .unwrap()
        .unwrap();
    let url = format!("http://{local}/tg/hook");
    for (id, text) in [(101, "one"), (102, "two"), (103, "three"), (104, "four")] {
        let mut u = fake.message_update(Where::Dm, &ann, text);
        u["update_id"] = id.into();
        assert_eq!(
            post_webhook(&url, Some("spool-secret"), u.to_string())
                .await
                .unwrap(),
            200
        );
    }
    assert_eq!(
        post_webhook(
            &url,
            Some("spool-secret"),
            "{\"update_id\": 105, \"message\": 7".into()
        )
        .await
        .unwrap(),
        200
    );
    // The core has "one" in hand but has not kept it (no receipt): it stays
    // in the spool, like the ones still waiting for room.
    let spool = dir.path().join(format!("telegram-webhook-{BOT_ID}"));
    let spooled = |id: i64| spool.join(format!("{id:020}.json")).exists();
    let Some(held) = rx.recv_unacked().await else {
        panic!("no first message")
    };
    let Inbound::Message(first) = &held.event else {
        panic!("not a message")
    };
    assert_eq!(first.text, "one");
    assert!(
        (101..=104).all(spooled),
        "nothing leaves the spool before its receipt"
    );
    // The crash: the task is gone without a graceful stop, "one" unkept.
    task.abort();
    let _ = task.await;
    drop(held);
    drop(rx);

    let mut r = Running::start(hook_config()).await;
    let mut after = Vec::new();
    for _ in 0..4 {
        after.push(r.next_message().await.text);
    }
    assert_eq!(
        after,
        ["one", "two", "three", "four"],
        "acknowledged deliveries were lost"
    );
    // Received (and acknowledged by the core) now: they leave the spool.
    for _ in 0..500 {
        if !(101..=104).any(spooled) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!(101..=104).any(spooled), "kept updates leave the spool");
    let bad = std::fs::read_dir(dir.path().join(format!("telegram-webhook-{BOT_ID}/bad")))
        .unwrap()
        .count();
    assert_eq!(bad, 1, "the malformed body is kept for the operator");
    r.stop().await;
}
