//! Media on Telegram through the real adapter against the fake Bot API:
//! attachments normalized (kind, type, size, name, duration), stickers left
//! out, albums as one message, downloads (`getFile` + the file route)
//! byte-exact, bounded and stall-proof with the token in no error, and
//! photos sent into forum topics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::fake_telegram::{
    FakeTelegram, FakeUser, FileField, Where, MAX_DOCUMENT_BYTES, MAX_DOWNLOAD_BYTES,
    MAX_PHOTO_BYTES, TOKEN,
};
use support::telegram_run::{addr, config, Running};
use switchboard_platform::{
    AttachmentKind, FileKind, InboundMessage, OutgoingFile, PlatformAdapter, PlatformError,
};

fn ann() -> FakeUser {
    FakeUser::new(900, "Ann")
}

/// A document message carrying the hosted `file_id`.
fn document(file_id: &str, size: Option<u64>) -> serde_json::Value {
    let mut doc = json!({"file_id": file_id, "file_unique_id": format!("u{file_id}"),
        "file_name": "report.pdf", "mime_type": "application/pdf"});
    if let Some(size) = size {
        doc["file_size"] = json!(size);
    }
    json!({"document": doc, "caption": "the report"})
}

async fn download(r: &Running, m: &InboundMessage, max: u64) -> Result<Vec<u8>, PlatformError> {
    let mut out = Vec::new();
    let n = r.adapter.download(&m.attachments[0], &mut out, max).await?;
    assert_eq!(n, out.len() as u64);
    Ok(out)
}

#[tokio::test]
async fn every_media_kind_is_normalized_and_stickers_are_left_out() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut r = Running::start(config(&fake, dir.path())).await;
    let ann = ann();

    fake.media(Where::Dm, &ann, json!({"photo": [
        {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 60, "file_size": 900},
        {"file_id": "large", "file_unique_id": "l", "width": 1280, "height": 853, "file_size": 120_000}],
        "caption": "look"}));
    let m = r.next_message().await;
    assert_eq!(m.text, "look");
    let a = &m.attachments[0];
    assert_eq!(
        (a.kind, a.handle.0.as_str()),
        (AttachmentKind::Image, "large")
    );
    assert_eq!(
        (a.mime.as_deref(), a.size),
        (Some("image/jpeg"), Some(120_000))
    );

    fake.media(
        Where::Dm,
        &ann,
        json!({"voice": {"file_id": "v1", "file_unique_id": "v",
        "duration": 7, "mime_type": "audio/ogg", "file_size": 5_000}}),
    );
    let m = r.next_message().await;
    let a = &m.attachments[0];
    assert_eq!(
        (a.kind, a.duration_secs, a.size),
        (AttachmentKind::Voice, Some(7), Some(5_000))
    );
    assert_eq!(
        (m.text.as_str(), a.mime.as_deref()),
        ("", Some("audio/ogg"))
    );

    fake.media(Where::Dm, &ann, document("d1", Some(2_048)));
    let a = &r.next_message().await.attachments[0];
    assert_eq!(
        (a.kind, a.name.as_deref()),
        (AttachmentKind::Document, Some("report.pdf"))
    );
    assert_eq!(
        (a.mime.as_deref(), a.size),
        (Some("application/pdf"), Some(2_048))
    );

    fake.media(
        Where::Dm,
        &ann,
        json!({"video": {"file_id": "vid", "file_unique_id": "x",
        "width": 640, "height": 360, "duration": 12, "file_name": "clip.mp4",
        "mime_type": "video/mp4", "file_size": 800_000}}),
    );
    let a = &r.next_message().await.attachments[0];
    assert_eq!((a.kind, a.duration_secs), (AttachmentKind::Video, Some(12)));
    assert_eq!(
        (a.name.as_deref(), a.mime.as_deref()),
        (Some("clip.mp4"), Some("video/mp4"))
    );

    fake.media(Where::Dm, &ann, json!({"audio": {"file_id": "au", "file_unique_id": "y",
        "duration": 184, "file_name": "song.mp3", "mime_type": "audio/mpeg", "file_size": 3_000_000}}));
    let a = &r.next_message().await.attachments[0];
    assert_eq!(
        (a.kind, a.duration_secs),
        (AttachmentKind::Audio, Some(184))
    );
    assert_eq!(
        (a.name.as_deref(), a.size),
        (Some("song.mp3"), Some(3_000_000))
    );

    fake.media(
        Where::Dm,
        &ann,
        json!({"sticker": {"file_id": "st", "file_unique_id": "z",
        "type": "regular", "width": 512, "height": 512, "is_animated": false,
        "is_video": false, "file_size": 9_000}}),
    );
    fake.message(Where::Dm, &ann, "after the sticker");
    let m = r.next_message().await;
    assert_eq!(
        m.text, "after the sticker",
        "the sticker produced no message"
    );
    assert!(m.attachments.is_empty());
    r.stop().await;
}

#[tokio::test]
async fn a_photo_downloads_byte_exact_through_get_file() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut r = Running::start(config(&fake, dir.path())).await;
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let id = fake.host_file(bytes.clone());
    fake.media(
        Where::Dm,
        &ann(),
        json!({"photo": [{"file_id": id, "file_unique_id": "p",
        "width": 800, "height": 600, "file_size": bytes.len()}]}),
    );
    let m = r.next_message().await;
    assert_eq!(download(&r, &m, 1 << 30).await.unwrap(), bytes);
    assert_eq!(fake.calls_to("GetFile").len(), 1);
    assert_eq!(fake.file_downloads().len(), 1);
    assert_eq!(
        r.adapter.capabilities().max_download_bytes,
        MAX_DOWNLOAD_BYTES
    );
    r.stop().await;
}

#[tokio::test]
async fn files_over_the_limit_are_refused_before_any_byte_is_fetched() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut r = Running::start(config(&fake, dir.path())).await;
    let ann = ann();

    // The update says how big it is: refused without asking Telegram.
    let huge = fake.host_file_of_size(25 << 20);
    fake.media(Where::Dm, &ann, document(&huge, Some(25 << 20)));
    let m = r.next_message().await;
    let e = download(&r, &m, 1 << 30).await.unwrap_err();
    assert!(
        matches!(e, PlatformError::TooLarge { size, max } if size == 25 << 20 && max == 20 << 20),
        "{e:?}"
    );
    assert!(fake.calls_to("GetFile").is_empty());

    // No size in the update: the Bot API's own refusal ("file is too big").
    fake.media(Where::Dm, &ann, document(&huge, None));
    let m = r.next_message().await;
    let e = download(&r, &m, 1 << 30).await.unwrap_err();
    assert!(
        matches!(e, PlatformError::TooLarge { max, .. } if max == 20 << 20),
        "{e:?}"
    );
    let refused = fake.calls_to("GetFile");
    assert_eq!(
        refused[0].description.as_deref(),
        Some("Bad Request: file is too big")
    );

    // Within Telegram's limit but over the caller's: refused on getFile's size.
    let medium = fake.host_file(vec![1; 4_000]);
    fake.media(Where::Dm, &ann, document(&medium, None));
    let m = r.next_message().await;
    let e = download(&r, &m, 1_000).await.unwrap_err();
    assert!(
        matches!(
            e,
            PlatformError::TooLarge {
                size: 4_000,
                max: 1_000
            }
        ),
        "{e:?}"
    );
    assert!(
        fake.file_downloads().is_empty(),
        "the file route was never hit"
    );
    r.stop().await;
}

#[tokio::test]
async fn a_stalled_download_is_given_up_and_no_error_shows_the_token() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&fake, dir.path());
    c.download_stall = Duration::from_millis(300);
    let mut r = Running::start(c).await;
    let ann = ann();
    let mut errors = Vec::new();

    let stalling = fake.host_stalling_file(vec![9; 64_000]);
    fake.media(Where::Dm, &ann, document(&stalling, None));
    let m = r.next_message().await;
    let e = download(&r, &m, 1 << 30).await.unwrap_err();
    assert!(matches!(e, PlatformError::Stalled), "{e:?}");
    assert_eq!(fake.file_downloads().len(), 1, "the transfer had started");
    errors.push(e);

    fake.media(Where::Dm, &ann, document("never-issued", None));
    let m = r.next_message().await;
    let e = download(&r, &m, 1 << 30).await.unwrap_err();
    assert!(matches!(e, PlatformError::NotFound), "{e:?}");
    errors.push(e);

    // The connection breaking mid-file: a transport error, whose text
    // reqwest would give with the URL (and so the token) in it.
    let id = fake.host_breaking_file(vec![1; 64_000]);
    fake.media(Where::Dm, &ann, document(&id, None));
    let m = r.next_message().await;
    let e = download(&r, &m, 1 << 30).await.unwrap_err();
    assert!(matches!(e, PlatformError::Network(_)), "{e:?}");
    errors.push(e);

    let secret = TOKEN.split_once(':').unwrap().1;
    for e in &errors {
        for text in [e.to_string(), format!("{e:?}")] {
            assert!(!text.contains(secret), "the token leaked: {text}");
        }
    }
    r.stop().await;
}

#[tokio::test]
async fn a_photo_reaches_a_forum_topic_with_its_caption() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = Running::start(config(&fake, dir.path())).await;
    let topic = Where::Topic {
        chat: -1002,
        thread: 77,
    };
    fake.ensure_chat(topic, &ann());
    let png = b"\x89PNG\r\n\x1a\nnot really".to_vec();
    let mut file = OutgoingFile::document(addr(-1002, Some(77)), "plot.png", png.clone())
        .with_caption("the plot");
    file.kind = FileKind::Photo;
    let sent = r.adapter.send_file(file).await.unwrap();
    let files = fake.documents(-1002);
    assert_eq!(files.len(), 1);
    let photo = &files[0];
    assert_eq!((photo.kind, photo.thread_id), (FileField::Photo, Some(77)));
    assert_eq!(
        (photo.caption.as_deref(), &photo.bytes),
        (Some("the plot"), &png)
    );
    assert_eq!(photo.message_id, sent.id.0);
    assert_eq!(
        fake.calls_to("SendPhoto")[0].params["message_thread_id"],
        "77"
    );

    // Over sendPhoto's 10 MB: sent as a document rather than refused.
    let mut big = OutgoingFile::document(
        addr(-1002, Some(77)),
        "huge.png",
        vec![7; MAX_PHOTO_BYTES + 1],
    );
    big.kind = FileKind::Photo;
    r.adapter.send_file(big).await.unwrap();
    let files = fake.documents(-1002);
    assert_eq!(
        (files[1].kind, files[1].bytes.len()),
        (FileField::Document, MAX_PHOTO_BYTES + 1)
    );
    assert!(
        fake.calls_to("SendPhoto").len() == 1,
        "no refused sendPhoto"
    );
    r.stop().await;
}

/// Posts a multipart form to the fake; returns (HTTP status, description).
async fn post_form(
    fake: &FakeTelegram,
    method: &str,
    parts: &[(&str, Option<&str>, Vec<u8>)],
) -> (u16, String) {
    let mut body = Vec::new();
    for (name, filename, data) in parts {
        let file = filename
            .map(|f| format!("; filename=\"{f}\""))
            .unwrap_or_default();
        body.extend_from_slice(
            format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"{file}\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--XyZ--\r\n");
    let response = reqwest::Client::new()
        .post(format!("{}bot{TOKEN}/{method}", fake.api_url()))
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap();
    (
        status,
        body["description"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn the_fake_refuses_uploads_the_bot_api_refuses() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    fake.ensure_chat(Where::Dm, &ann());
    let chat = ("chat_id", None, b"900".to_vec());
    assert_eq!(
        post_form(&fake, "sendPhoto", std::slice::from_ref(&chat)).await,
        (
            400,
            "Bad Request: there is no photo in the request".to_owned()
        )
    );
    assert_eq!(
        post_form(
            &fake,
            "sendDocument",
            &[chat.clone(), ("photo", Some("a.png"), vec![1])]
        )
        .await,
        (
            400,
            "Bad Request: there is no document in the request".to_owned()
        )
    );
    let photo = ("photo", Some("big.png"), vec![1; MAX_PHOTO_BYTES + 1]);
    assert_eq!(
        post_form(&fake, "sendPhoto", &[chat.clone(), photo]).await,
        (400, "Bad Request: PHOTO_INVALID_DIMENSIONS".to_owned())
    );
    let document = ("document", Some("big.bin"), vec![1; MAX_DOCUMENT_BYTES + 1]);
    assert_eq!(
        post_form(&fake, "sendDocument", &[chat.clone(), document]).await,
        (413, "Bad Request: Request Entity Too Large".to_owned())
    );
    let ok = ("photo", Some("ok.png"), vec![1; 100]);
    assert_eq!(post_form(&fake, "sendPhoto", &[chat, ok]).await.0, 200);
    assert_eq!(fake.documents(900).len(), 1);
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

#[tokio::test]
async fn an_album_arrives_as_one_message_and_holds_up_no_other_chat() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&fake, dir.path());
    c.album_window = Duration::from_secs(1);
    let mut r = Running::start(c).await;
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
    let mut c = config(&fake, dir.path());
    c.album_window = Duration::from_secs(2);
    let mut r = Running::start(c).await;
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
    let mut c = config(&fake, dir.path());
    c.album_window = Duration::from_secs(3600);
    let mut r = Running::start(c).await;
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
    let mut c = config(&fake, dir.path());
    c.album_window = Duration::from_millis(100);
    let mut r = Running::start(c).await;
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

/// A webhook answers an album's parts at once, so a crash while they are
/// held must not lose them: they stay in the spool until their album has
/// left, and the next start sends the album.
#[tokio::test]
async fn webhook_album_parts_held_at_a_crash_are_delivered_after_it() {
    use switchboard_platform::Inbound;
    use switchboard_telegram::{TelegramAdapter, WebhookConfig};
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hook_config = |window: Duration| {
        let mut c = config(&fake, dir.path());
        c.album_window = window;
        c.webhook = Some(WebhookConfig {
            url: "https://bot.example.test/tg/hook".parse().unwrap(),
            listen: "127.0.0.1:0".parse().unwrap(),
            secret: switchboard_platform::Secret::new("album-secret"),
        });
        c
    };
    // A process whose album window outlasts it.
    let adapter = std::sync::Arc::new(
        TelegramAdapter::connect(hook_config(Duration::from_secs(60)))
            .await
            .unwrap(),
    );
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (a, s) = (adapter.clone(), shutdown.clone());
    let task = tokio::spawn(async move { a.run(tx, s).await });
    let local = tokio::time::timeout(Duration::from_secs(10), adapter.webhook_addr())
        .await
        .unwrap()
        .unwrap();
    let url = format!("http://{local}/tg/hook");
    let ann = ann();
    let parts = [("p1", Some("a pair")), ("p2", None)];
    for (n, (file, caption)) in parts.into_iter().enumerate() {
        let mut update = fake.media_update(Where::Dm, &ann, album_part("c", file, caption));
        update["update_id"] = json!(n + 1);
        let status =
            support::fake_telegram::post_webhook(&url, Some("album-secret"), update.to_string());
        assert_eq!(status.await.unwrap(), 200);
    }
    let mut after = fake.message_update(Where::Dm, &ann, "after the album");
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
    let mut c = config(&fake, dir.path());
    c.album_window = Duration::from_secs(1);
    c.webhook = Some(switchboard_telegram::WebhookConfig {
        url: "https://bot.example.test/tg/hook".parse().unwrap(),
        listen: "127.0.0.1:0".parse().unwrap(),
        secret: switchboard_platform::Secret::new("album-secret"),
    });
    let mut r = Running::start(c).await;
    let local = tokio::time::timeout(Duration::from_secs(10), r.adapter.webhook_addr())
        .await
        .unwrap()
        .unwrap();
    let url = format!("http://{local}/tg/hook");
    let ann = ann();
    let parts = [("p1", Some("a pair")), ("p2", None)];
    for (n, (file, caption)) in parts.into_iter().enumerate() {
        let mut update = fake.media_update(Where::Dm, &ann, album_part("w", file, caption));
        update["update_id"] = json!(n + 1);
        let status =
            support::fake_telegram::post_webhook(&url, Some("album-secret"), update.to_string());
        assert_eq!(status.await.unwrap(), 200);
    }
    let album = r.next_message().await;
    assert_eq!(
        (album.text.as_str(), handles(&album)),
        ("a pair", vec!["p1", "p2"])
    );
    r.stop().await;
}
