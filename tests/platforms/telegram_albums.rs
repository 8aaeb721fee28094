//! Albums on Telegram through the real adapter against the fake Bot API:
//! the parts of a media group arrive as one message (split across batches
//! too), other chats never wait for them, and a crash while they are held —
//! in long polling or behind a webhook — neither loses nor repeats them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::fake_telegram::{FakeTelegram, FakeUser, Where};
use support::telegram_run::{config, Running};
use switchboard_platform::{AttachmentKind, InboundMessage, PlatformAdapter};

fn ann() -> FakeUser {
    FakeUser::new(900, "Ann")
}

/// One photo of album `group`.
fn album_part(group: &str, file_id: &str, caption: Option<&str>) -> serde_json::Value {
    let mut body = json!({"media_group_id": group, "photo": [{"file_id": file_id,
        "file_unique_id": format!("u{file_id}"), "width": 800, "height": 600, "file_size": 1_000}]});
    if let Some(c) = caption {
        body["caption"] = json!(c);
    }
    body
}

fn handles(m: &InboundMessage) -> Vec<&str> {
    m.attachments.iter().map(|a| a.handle.0.as_str()).collect()
}

/// The adapter polling `fake` with state in `dir`, albums held `window`.
async fn polling(fake: &FakeTelegram, dir: &std::path::Path, window: Duration) -> Running {
    let mut c = config(fake, dir);
    c.album_window = window;
    Running::start(c).await
}

#[tokio::test]
async fn an_album_arrives_as_one_message_and_holds_up_no_other_chat() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut r = polling(&fake, dir.path(), Duration::from_secs(1)).await;
    let (ann, bob) = (ann(), FakeUser::new(901, "Bob"));
    let first = fake.media(Where::Dm, &ann, album_part("g1", "p1", None));
    fake.media(Where::Dm, &ann, album_part("g1", "p2", Some("our trip")));
    fake.media(Where::Dm, &ann, album_part("g1", "p3", None));
    fake.message(Where::Dm, &bob, "meanwhile, elsewhere");

    let other = r.next_message().await;
    assert_eq!(
        other.text, "meanwhile, elsewhere",
        "not held behind the album"
    );
    let album = r.next_message().await;
    assert_eq!(album.text, "our trip");
    assert_eq!(album.message_id.0, first.message_id);
    assert_eq!(handles(&album), ["p1", "p2", "p3"]);
    assert!(album
        .attachments
        .iter()
        .all(|a| a.kind == AttachmentKind::Image));

    // In a group, the parts without caption join the mentioned one.
    let mention = format!("@{} what are these?", r.adapter.bot_username());
    fake.media(
        Where::Group(-1001),
        &bob,
        album_part("g2", "q1", Some(&mention)),
    );
    fake.media(Where::Group(-1001), &bob, album_part("g2", "q2", None));
    let album = r.next_message().await;
    assert_eq!(
        (album.text.as_str(), handles(&album)),
        ("what are these?", vec!["q1", "q2"])
    );
    r.stop().await;
}

#[tokio::test]
async fn an_album_split_across_batches_is_still_one_message() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut r = polling(&fake, dir.path(), Duration::from_secs(2)).await;
    let ann = ann();
    let first = fake.media(Where::Dm, &ann, album_part("g", "p1", None));
    fake.media(Where::Dm, &ann, album_part("g", "p2", None));
    // The poller has the first two and asks again without confirming them.
    let again = |f: &FakeTelegram| {
        f.calls_to("GetUpdates")
            .iter()
            .filter(|c| c.params["offset"] == first.update_id)
            .count()
            >= 2
    };
    assert!(fake.wait_until(Duration::from_secs(10), again).await);
    fake.media(Where::Dm, &ann, album_part("g", "p3", Some("three")));
    let album = r.next_message().await;
    assert_eq!(
        (album.text.as_str(), handles(&album)),
        ("three", vec!["p1", "p2", "p3"])
    );
    assert!(
        fake.wait_until(Duration::from_secs(10), |f| f.pending_updates() == 0)
            .await,
        "confirmed once sent"
    );
    r.stop().await;
}

#[tokio::test]
async fn a_crash_while_an_album_is_held_loses_and_repeats_nothing() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut r = polling(&fake, dir.path(), Duration::from_secs(3600)).await;
    let (ann, bob) = (ann(), FakeUser::new(901, "Bob"));
    let first = fake.media(Where::Dm, &ann, album_part("g", "p1", Some("two photos")));
    fake.media(Where::Dm, &ann, album_part("g", "p2", None));
    let forwarded = fake.message(Where::Dm, &bob, "forwarded before the crash");
    assert_eq!(r.next_message().await.text, "forwarded before the crash");
    let offset_file = dir
        .path()
        .join(format!("telegram-offset-{}", r.adapter.bot_id()));
    // Saved: everything below the album, and the message after it as done.
    let expected = format!("{}\n{}\n", first.update_id - 1, forwarded.update_id);
    let saved =
        |_: &FakeTelegram| std::fs::read_to_string(&offset_file).is_ok_and(|t| t == expected);
    let held = fake.wait_until(Duration::from_secs(10), saved).await;
    assert!(
        held,
        "offset file {:?}, first part {}",
        std::fs::read_to_string(&offset_file),
        first.update_id
    );
    assert_eq!(fake.pending_updates(), 3, "Telegram still holds the album");

    r.task.abort();
    let _ = r.task.await;
    let mut r = polling(&fake, dir.path(), Duration::from_millis(100)).await;
    let album = r.next_message().await;
    assert_eq!(
        (album.text.as_str(), handles(&album)),
        ("two photos", vec!["p1", "p2"])
    );
    fake.message(Where::Dm, &ann, "after the restart");
    assert_eq!(
        r.next_message().await.text,
        "after the restart",
        "nothing repeated"
    );
    r.stop().await;
}

/// The adapter's configuration in webhook mode, albums held `window`.
fn hook_config(
    fake: &FakeTelegram,
    dir: &std::path::Path,
    window: Duration,
) -> switchboard_telegram::TelegramConfig {
    let mut c = config(fake, dir);
    c.album_window = window;
    c.webhook = Some(switchboard_telegram::WebhookConfig {
        url: "https://bot.example.test/tg/hook".parse().unwrap(),
        listen: "127.0.0.1:0".parse().unwrap(),
        secret: switchboard_platform::Secret::new("album-secret"),
    });
    c
}

/// Ann's two-photo album `group` (updates 1 and 2), delivered to the webhook at `url`.
async fn post_album(fake: &FakeTelegram, url: &str, group: &str) {
    let ann = ann();
    let parts = [("p1", Some("a pair")), ("p2", None)];
    for (n, (file, caption)) in parts.into_iter().enumerate() {
        let mut update = fake.media_update(Where::Dm, &ann, album_part(group, file, caption));
        update["update_id"] = json!(n + 1);
        let status =
            support::fake_telegram::post_webhook(url, Some("album-secret"), update.to_string());
        assert_eq!(status.await.unwrap(), 200);
    }
}

/// A webhook answers an album's parts at once, so a crash while they are
/// held must not lose them: they stay in the spool until their album has
/// left, and the next start sends the album.
#[tokio::test]
async fn webhook_album_parts_held_at_a_crash_are_delivered_after_it() {
    use switchboard_platform::Inbound;
    use switchboard_telegram::TelegramAdapter;
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hook_config = |window: Duration| hook_config(&fake, dir.path(), window);
    // A process whose album window outlasts it.
    let adapter = std::sync::Arc::new(
        TelegramAdapter::connect(hook_config(Duration::from_secs(60)))
            .await
            .unwrap(),
    );
    let (tx, mut rx) = support::intake::acking(8);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (a, s) = (adapter.clone(), shutdown.clone());
    let task = tokio::spawn(async move { a.run(tx, s).await });
    let local = tokio::time::timeout(Duration::from_secs(10), adapter.webhook_addr())
        .await
        .unwrap()
        .unwrap();
    let url = format!("http://{local}/tg/hook");
    post_album(&fake, &url, "c").await;
    let mut after = fake.message_update(Where::Dm, &ann(), "after the album");
    after["update_id"] = json!(3);
    let status =
        support::fake_telegram::post_webhook(&url, Some("album-secret"), after.to_string());
    assert_eq!(status.await.unwrap(), 200);
    // Updates are taken in order: when the message arrives, both parts are held.
    let next = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
    let Ok(Some(Inbound::Message(m))) = next else {
        panic!("no message: {next:?}")
    };
    assert_eq!(m.text, "after the album");
    // The crash.
    task.abort();
    let _ = task.await;
    drop(rx);

    let mut r = Running::start(hook_config(Duration::from_millis(200))).await;
    let album = r.next_message().await;
    assert_eq!(
        (album.text.as_str(), handles(&album)),
        ("a pair", vec!["p1", "p2"]),
        "the held parts were lost"
    );
    r.stop().await;
    let spool = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("telegram-webhook-")
        })
        .unwrap()
        .path();
    let left: Vec<_> = std::fs::read_dir(spool)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .collect();
    assert!(
        left.is_empty(),
        "forwarded parts left in the spool: {left:?}"
    );
}

#[tokio::test]
async fn webhook_deliveries_of_an_album_make_one_message() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut r = Running::start(hook_config(&fake, dir.path(), Duration::from_secs(1))).await;
    let local = tokio::time::timeout(Duration::from_secs(10), r.adapter.webhook_addr())
        .await
        .unwrap()
        .unwrap();
    post_album(&fake, &format!("http://{local}/tg/hook"), "w").await;
    let album = r.next_message().await;
    assert_eq!(
        (album.text.as_str(), handles(&album)),
        ("a pair", vec!["p1", "p2"])
    );
    r.stop().await;
}
