//! `PlatformAdapter::send_file` on each platform against its strict fake:
//! Telegram `sendDocument` and Discord multipart messages arrive whole, in the
//! right chat and topic; oversize files are refused before any upload; the
//! fakes refuse malformed uploads as the real APIs do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use support::fake_discord::{FakeDiscord, TOKEN as DISCORD_TOKEN};
use support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN};
use support::telegram_run::{addr, config, Running};
use switchboard_discord::{DiscordAdapter, DiscordConfig};
use switchboard_platform::{
    ChatAddress, ChatId, OutgoingFile, Platform, PlatformAdapter, PlatformError, Secret, ThreadId,
};

const CHANNEL: u64 = 1_200_000_000_000_000_021;
const THREAD: u64 = 1_200_000_000_000_000_022;

fn form(boundary: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, filename, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        let file = filename
            .map(|f| format!("; filename=\"{f}\""))
            .unwrap_or_default();
        body.extend_from_slice(
            format!("Content-Disposition: form-data; name=\"{name}\"{file}\r\n\r\n").as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

#[tokio::test]
async fn telegram_files_go_to_the_topic_as_documents() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = Running::start(config(&fake, dir.path())).await;
    let topic = Where::Topic {
        chat: -2101,
        thread: 5,
    };
    fake.ensure_chat(topic, &FakeUser::new(920, "Ann"));
    let bytes = (0..=255u8).cycle().take(70_000).collect::<Vec<u8>>();
    let sent = r
        .adapter
        .send_file(
            OutgoingFile::document(addr(-2101, Some(5)), "data.bin", bytes.clone())
                .with_caption("the data"),
        )
        .await
        .unwrap();
    let docs = fake.documents(-2101);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].message_id, sent.id.0);
    assert_eq!(docs[0].thread_id, Some(5));
    assert_eq!(docs[0].file_name, "data.bin");
    assert_eq!(docs[0].caption.as_deref(), Some("the data"));
    assert_eq!(docs[0].bytes, bytes, "binary content arrives intact");

    // Over the Bot API's 50 MB: refused before any upload.
    let huge = vec![b'x'; r.adapter.capabilities().max_upload_bytes + 1];
    let err = r
        .adapter
        .send_file(OutgoingFile::document(addr(-2101, None), "huge.bin", huge))
        .await
        .unwrap_err();
    assert!(matches!(err, PlatformError::TooLarge { .. }), "{err}");
    assert_eq!(fake.calls_to("SendDocument").len(), 1);
}

#[tokio::test]
async fn the_fake_bot_api_refuses_malformed_documents() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    fake.ensure_chat(Where::Dm, &FakeUser::new(920, "Ann"));
    let url = format!("{}bot{TOKEN}/sendDocument", fake.api_url());
    let client = reqwest::Client::new();
    let post = |body: Vec<u8>, content_type: &'static str| {
        client
            .post(&url)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let ct = "multipart/form-data; boundary=B0";
    let no_document = form("B0", &[("chat_id", None, b"920")]);
    let no_chat = form("B0", &[("document", Some("a.txt"), b"hi")]);
    let not_a_file = form(
        "B0",
        &[("chat_id", None, b"920"), ("document", None, b"hi")],
    );
    let long_caption = "c".repeat(1025);
    let too_long = form(
        "B0",
        &[
            ("chat_id", None, b"920"),
            ("caption", None, long_caption.as_bytes()),
            ("document", Some("a.txt"), b"hi"),
        ],
    );
    let good = form(
        "B0",
        &[
            ("chat_id", None, b"920"),
            ("document", Some("a.txt"), b"hi"),
        ],
    );
    let mut truncated = good.clone();
    truncated.truncate(good.len() - 8);
    for (what, body, content_type) in [
        ("no document", no_document, ct),
        ("no chat", no_chat, ct),
        ("a text field, not a file", not_a_file, ct),
        ("a caption over 1,024", too_long, ct),
        ("no closing boundary", truncated, ct),
        ("no boundary", good.clone(), "multipart/form-data"),
        ("JSON content type", good.clone(), "application/json"),
    ] {
        let status = post(body, content_type).await.unwrap().status().as_u16();
        assert_eq!(status, 400, "{what}");
    }
    assert!(fake.documents(920).is_empty());
    assert_eq!(post(good, ct).await.unwrap().status().as_u16(), 200);
    assert_eq!(fake.documents(920).len(), 1);
}

#[tokio::test]
async fn discord_files_are_multipart_messages_in_the_thread() {
    let fake = FakeDiscord::start().await;
    fake.add_text_channel(CHANNEL);
    fake.add_thread(THREAD, CHANNEL);
    let mut config = DiscordConfig::new(Secret::new(DISCORD_TOKEN));
    config.api_url = Some(fake.api_url.clone());
    let adapter = DiscordAdapter::connect(config).await.unwrap();
    let to = ChatAddress::new(
        Platform::Discord,
        ChatId(i64::try_from(CHANNEL).unwrap()),
        Some(ThreadId(i64::try_from(THREAD).unwrap())),
    );
    let sent = adapter
        .send_file(
            OutgoingFile::document(to, "answer.md", b"# Title\n".to_vec())
                .with_caption("Full answer"),
        )
        .await
        .unwrap();
    let uploads = fake.uploads(THREAD);
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].filename, "answer.md");
    assert_eq!(uploads[0].text(), "# Title\n");
    assert_eq!(uploads[0].message, u64::try_from(sent.id.0).unwrap());
    let message = fake.message(uploads[0].message).unwrap();
    assert_eq!(message["content"], "Full answer");
    assert_eq!(message["attachments"][0]["filename"], "answer.md");

    let huge = vec![b'x'; adapter.capabilities().max_upload_bytes + 1];
    assert!(adapter
        .send_file(OutgoingFile::document(to, "huge.bin", huge))
        .await
        .is_err());
    assert_eq!(
        fake.uploads(THREAD).len(),
        1,
        "nothing uploaded over the limit"
    );
}

#[tokio::test]
async fn the_fake_discord_refuses_malformed_uploads() {
    let fake = FakeDiscord::start().await;
    fake.add_text_channel(CHANNEL);
    let url = format!(
        "{}/api/v10/channels/{CHANNEL}/messages",
        fake.api_url.trim_end_matches('/')
    );
    let client = reqwest::Client::new();
    let post = |body: Vec<u8>| {
        client
            .post(&url)
            .header("authorization", format!("Bot {DISCORD_TOKEN}"))
            .header("content-type", "multipart/form-data; boundary=B1")
            .body(body)
            .send()
    };
    let payload = br#"{"content":"x","attachments":[{"id":0,"filename":"a.txt"}]}"#;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "no payload_json",
            form("B1", &[("files[0]", Some("a.txt"), b"hi")]),
        ),
        ("no file", form("B1", &[("payload_json", None, payload)])),
        (
            "a file without a name",
            form(
                "B1",
                &[("payload_json", None, payload), ("files[0]", None, b"hi")],
            ),
        ),
        (
            "an attachment naming no file",
            form(
                "B1",
                &[
                    ("payload_json", None, payload),
                    ("files[1]", Some("a.txt"), b"hi"),
                ],
            ),
        ),
    ];
    for (what, body) in cases {
        let status = post(body).await.unwrap().status().as_u16();
        assert_eq!(status, 400, "{what}");
    }
    let too_big = vec![b'x'; support::fake_discord::MAX_UPLOAD_BYTES + 1];
    let body = form(
        "B1",
        &[
            ("payload_json", None, payload),
            ("files[0]", Some("a.txt"), &too_big),
        ],
    );
    assert_eq!(post(body).await.unwrap().status().as_u16(), 413);
    assert!(fake.uploads(CHANNEL).is_empty());
    let good = form(
        "B1",
        &[
            ("payload_json", None, payload),
            ("files[0]", Some("a.txt"), b"hi"),
        ],
    );
    assert_eq!(post(good).await.unwrap().status().as_u16(), 200);
    assert_eq!(fake.uploads(CHANNEL).len(), 1);
}
