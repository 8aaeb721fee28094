//! Media on Telegram through the real adapter against the fake Bot API:
//! attachments normalized (kind, type, size, name, duration), stickers left
//! out (albums are in `telegram_albums`), downloads (`getFile` + the file route)
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
