//! Media on Discord through the real adapter against the fake (REST, gateway
//! and CDN): attachments downloaded byte-exact through a fresh message fetch
//! and the signed CDN URL, size limits enforced before any transfer, files
//! sent into threads, and the fake refusing malformed multipart bodies as
//! Discord does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;
use support::fake_discord::{
    FakeDiscord, FakeFile, Press, UserMessage, GUILD_ID, MAX_UPLOAD_BYTES, TOKEN,
};
use switchboard_discord::{DiscordAdapter, DiscordConfig};
use switchboard_platform::{
    ActionId, AttachmentKind, Button, ButtonStyle, ChatAddress, ChatId, FileKind, Inbound,
    InboundMessage, OutgoingFile, OutgoingMessage, Platform, PlatformAdapter, PlatformError,
    Secret, ThreadId,
};
use tokio_util::sync::CancellationToken;

const CHANNEL: u64 = 1_200_000_000_000_000_011;
const THREAD: u64 = 1_200_000_000_000_000_014;
const ALICE: u64 = 1_300_000_000_000_000_011;

struct Media {
    fake: FakeDiscord,
    adapter: Arc<DiscordAdapter>,
    inbound: support::intake::Received,
    shutdown: CancellationToken,
}

async fn start() -> Media {
    let fake = FakeDiscord::start().await;
    fake.add_text_channel(CHANNEL);
    fake.add_thread(THREAD, CHANNEL);
    let mut config = DiscordConfig::new(Secret::new(TOKEN));
    config.api_url = Some(fake.api_url.clone());
    let adapter = Arc::new(DiscordAdapter::connect(config).await.unwrap());
    let (tx, inbound) = support::intake::acking(16);
    let shutdown = CancellationToken::new();
    let (a, s) = (adapter.clone(), shutdown.clone());
    tokio::spawn(async move { a.run(tx, s).await });
    assert!(fake.wait_ready(1).await, "the shard never became ready");
    Media {
        fake,
        adapter,
        inbound,
        shutdown,
    }
}

impl Media {
    async fn say(&mut self, message: UserMessage) -> InboundMessage {
        self.fake.send_message(message).expect("shard connected");
        let next = tokio::time::timeout(Duration::from_secs(15), self.inbound.recv()).await;
        match next.expect("no inbound message").expect("inbound closed") {
            Inbound::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    async fn download(&self, m: &InboundMessage, max: u64) -> Result<Vec<u8>, PlatformError> {
        let mut out = Vec::new();
        let n = self
            .adapter
            .download(&m.attachments[0], &mut out, max)
            .await?;
        assert_eq!(n, out.len() as u64);
        Ok(out)
    }

    fn message_fetches(&self) -> usize {
        self.fake
            .calls()
            .iter()
            .filter(|c| c.method == "GET" && c.path.contains("/messages/"))
            .count()
    }
}

impl Drop for Media {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

#[tokio::test]
async fn an_attachment_downloads_byte_exact_through_a_fresh_message_fetch() {
    let mut h = start().await;
    let bytes: Vec<u8> = (0..250_000u32).map(|i| (i * 13 % 241) as u8).collect();
    let file = FakeFile::new("chart.png", "image/png", bytes.clone());
    let m = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "what is this?")
                .mentioning_bot()
                .with_file(file),
        )
        .await;
    assert_eq!(m.text, "what is this?");
    let a = &m.attachments[0];
    assert_eq!(
        (a.kind, a.name.as_deref()),
        (AttachmentKind::Image, Some("chart.png"))
    );
    assert_eq!(
        (a.mime.as_deref(), a.size),
        (Some("image/png"), Some(250_000))
    );
    assert!(!a.handle.0.contains("http"), "the core never sees a URL");
    assert_eq!(h.download(&m, 1 << 30).await.unwrap(), bytes);
    assert_eq!(
        h.message_fetches(),
        1,
        "the message is fetched again for a fresh URL"
    );
    assert_eq!(h.fake.cdn_downloads().len(), 1);
    assert_eq!(h.adapter.capabilities().max_download_bytes, 10 << 20);
}

#[tokio::test]
async fn a_voice_message_is_a_voice_attachment_with_its_length() {
    let mut h = start().await;
    let ogg = b"OggS\0voice".to_vec();
    let m = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "")
                .mentioning_bot()
                .with_file(FakeFile::voice(ogg.clone(), 4.6)),
        )
        .await;
    let a = &m.attachments[0];
    assert_eq!((a.kind, a.duration_secs), (AttachmentKind::Voice, Some(5)));
    assert_eq!(a.mime.as_deref(), Some("audio/ogg"));
    assert_eq!(h.download(&m, 1 << 20).await.unwrap(), ogg);
}

#[tokio::test]
async fn oversized_attachments_are_refused_before_the_transfer() {
    let mut h = start().await;
    let huge = FakeFile::of_size("video.mp4", "video/mp4", 12 << 20);
    let m = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "big one")
                .mentioning_bot()
                .with_file(huge),
        )
        .await;
    let e = h.download(&m, 1 << 30).await.unwrap_err();
    assert!(
        matches!(e, PlatformError::TooLarge { size, max } if size == 12 << 20 && max == 10 << 20),
        "{e:?}"
    );
    assert_eq!(h.message_fetches(), 0, "refused on the size the event gave");

    let small = FakeFile::new("notes.txt", "text/plain", vec![b'x'; 5_000]);
    let m = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "notes")
                .mentioning_bot()
                .with_file(small),
        )
        .await;
    let e = h.download(&m, 1_000).await.unwrap_err();
    assert!(
        matches!(
            e,
            PlatformError::TooLarge {
                size: 5_000,
                max: 1_000
            }
        ),
        "{e:?}"
    );
    assert!(h.fake.cdn_downloads().is_empty(), "the CDN was never asked");
}

#[tokio::test]
async fn a_vanished_attachment_is_not_found_and_no_error_shows_its_url() {
    let mut h = start().await;
    let file = FakeFile::new("a.txt", "text/plain", b"hello".to_vec());
    let mut m = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "file")
                .mentioning_bot()
                .with_file(file),
        )
        .await;
    // Another attachment id on the same message: Discord lists no such file.
    let handle = &mut m.attachments[0].handle.0;
    *handle = format!("{}1", handle);
    let e = h.download(&m, 1 << 30).await.unwrap_err();
    assert!(matches!(e, PlatformError::NotFound), "{e:?}");
    let mut errors = vec![e];

    // A transfer that breaks off: reqwest's error names the URL; ours not.
    let file = FakeFile::new("b.bin", "application/octet-stream", vec![3; 64_000]).breaking();
    let m = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "broken")
                .mentioning_bot()
                .with_file(file),
        )
        .await;
    let e = h.download(&m, 1 << 30).await.unwrap_err();
    assert!(matches!(e, PlatformError::Network(_)), "{e:?}");
    errors.push(e);
    for e in errors {
        for text in [e.to_string(), format!("{e:?}")] {
            assert!(
                !text.contains("hm=") && !text.contains("/attachments/"),
                "{text}"
            );
        }
    }
}

#[tokio::test]
async fn a_file_for_a_thread_goes_to_the_threads_channel() {
    let h = start().await;
    let to = ChatAddress::new(
        Platform::Discord,
        ChatId(CHANNEL as i64),
        Some(ThreadId(THREAD as i64)),
    );
    let png = b"\x89PNG\r\n\x1a\nfake".to_vec();
    let mut file = OutgoingFile::document(to, "plot.png", png.clone()).with_caption("the plot");
    file.kind = FileKind::Photo;
    let sent = h.adapter.send_file(file).await.unwrap();
    assert_eq!(sent.chat, to);
    let uploads = h.fake.uploads(THREAD);
    assert_eq!(uploads.len(), 1, "uploaded to the thread's channel");
    assert_eq!(
        (uploads[0].filename.as_str(), &uploads[0].bytes),
        ("plot.png", &png)
    );
    assert!(h.fake.uploads(CHANNEL).is_empty());
    let message = h.fake.message(uploads[0].message).unwrap();
    assert_eq!(message["content"], "the plot");

    let big = OutgoingFile::document(to, "big.bin", vec![0; MAX_UPLOAD_BYTES + 1]);
    let e = h.adapter.send_file(big).await.unwrap_err();
    assert!(matches!(e, PlatformError::Rejected(_)), "{e:?}");
}

#[tokio::test]
async fn a_boosted_servers_upload_limit_is_learned_from_its_interactions() {
    let mut h = start().await;
    h.fake.boost(GUILD_ID, 2);
    let to = ChatAddress::new(Platform::Discord, ChatId(CHANNEL as i64), None);
    let twelve_mib = || OutgoingFile::document(to, "data.bin", vec![7; 12 << 20]);

    // Before Discord said otherwise: the 10 MiB every server allows, refused
    // before any transfer.
    assert_eq!(h.adapter.upload_limit(to), MAX_UPLOAD_BYTES);
    let e = h.adapter.send_file(twelve_mib()).await.unwrap_err();
    assert!(
        matches!(&e, PlatformError::Rejected(m) if m.contains("upload limit")),
        "{e:?}"
    );
    assert!(h.fake.uploads(CHANNEL).is_empty());

    // A press in the guild carries its `attachment_size_limit`.
    let button = Button {
        label: "OK".into(),
        action: ActionId::parse("fb:1:up").unwrap(),
        style: ButtonStyle::Primary,
        shortcut: None,
    };
    let sent = h
        .adapter
        .send(
            &to,
            OutgoingMessage::text("Was this useful?").with_buttons(vec![vec![button]]),
        )
        .await
        .unwrap();
    h.fake
        .press(Press::new(sent.id.0 as u64, "fb:1:up", ALICE))
        .expect("pressed");
    let press = tokio::time::timeout(Duration::from_secs(15), h.inbound.recv()).await;
    assert!(
        matches!(press, Ok(Some(Inbound::ButtonPress(_)))),
        "{press:?}"
    );
    assert_eq!(h.adapter.upload_limit(to), 50 << 20);
    assert_eq!(h.adapter.download_limit(to), 50 << 20);
    assert_eq!(h.fake.guild_lookups(), 0, "the interaction alone said so");
    h.adapter.send_file(twelve_mib()).await.unwrap();
    let uploads = h.fake.uploads(CHANNEL);
    assert_eq!(
        (uploads.len(), uploads[0].bytes.len()),
        (1, 12 << 20),
        "the file went through whole"
    );
    let over = OutgoingFile::document(to, "huge.bin", vec![0; (50 << 20) + 1]);
    let e = h.adapter.send_file(over).await.unwrap_err();
    assert!(matches!(e, PlatformError::Rejected(_)), "{e:?}");
    // A DM keeps the default.
    let dm = ChatAddress::new(Platform::Discord, ChatId(99), None);
    assert_eq!(h.adapter.upload_limit(dm), MAX_UPLOAD_BYTES);
}

#[tokio::test]
async fn a_boosted_servers_limit_is_looked_up_at_its_first_message() {
    let mut h = start().await;
    h.fake.boost(GUILD_ID, 3);
    let to = ChatAddress::new(Platform::Discord, ChatId(CHANNEL as i64), None);
    assert_eq!(h.adapter.download_limit(to), MAX_UPLOAD_BYTES as u64);

    // The guild's first message: its boost level is looked up, once.
    let big = FakeFile::new("scan.pdf", "application/pdf", vec![b'%'; 12 << 20]);
    let scan = h
        .say(
            UserMessage::new(CHANNEL, ALICE, "the scan")
                .mentioning_bot()
                .with_file(big),
        )
        .await;
    for _ in 0..200 {
        if h.adapter.download_limit(to) > MAX_UPLOAD_BYTES as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(h.adapter.download_limit(to), 100 << 20);
    let bytes = h.download(&scan, 1 << 30).await.unwrap();
    assert_eq!(
        bytes.len(),
        12 << 20,
        "the boosted server's file came whole"
    );
    let file = OutgoingFile::document(to, "back.bin", vec![1; 12 << 20]);
    h.adapter.send_file(file).await.unwrap();
    h.say(UserMessage::new(CHANNEL, ALICE, "thanks").mentioning_bot())
        .await;
    assert_eq!(h.fake.guild_lookups(), 1, "one look-up per guild");
}

/// Posts a multipart body to the fake's message route.
async fn post_form(
    fake: &FakeDiscord,
    parts: &[(&str, Option<&str>, Vec<u8>)],
) -> (u16, serde_json::Value) {
    let mut body = Vec::new();
    for (name, filename, data) in parts {
        body.extend_from_slice(b"--B0undary\r\nContent-Disposition: form-data; name=\"");
        body.extend_from_slice(name.as_bytes());
        body.push(b'"');
        if let Some(f) = filename {
            body.extend_from_slice(format!("; filename=\"{f}\"").as_bytes());
        }
        body.extend_from_slice(b"\r\n\r\n");
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"--B0undary--\r\n");
    let response = reqwest::Client::new()
        .post(format!(
            "{}/api/v10/channels/{CHANNEL}/messages",
            fake.api_url
        ))
        .header("authorization", format!("Bot {TOKEN}"))
        .header("content-type", "multipart/form-data; boundary=B0undary")
        .body(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn the_fake_refuses_malformed_file_messages_as_discord_does() {
    let fake = FakeDiscord::start().await;
    fake.add_text_channel(CHANNEL);
    let payload = |ids: &str| format!(r#"{{"content":"x","attachments":[{ids}]}}"#).into_bytes();
    let file = |n: usize| ("files[0]", Some("a.txt"), vec![b'a'; n]);

    let (status, body) = post_form(&fake, &[file(3)]).await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (400, Some(50035)),
        "no payload_json"
    );
    let (status, _) = post_form(
        &fake,
        &[(
            "payload_json",
            None,
            payload(r#"{"id":0,"filename":"a.txt"}"#),
        )],
    )
    .await;
    assert_eq!(status, 400, "no file part");
    let (status, _) = post_form(
        &fake,
        &[
            (
                "payload_json",
                None,
                payload(r#"{"id":1,"filename":"a.txt"}"#),
            ),
            file(3),
        ],
    )
    .await;
    assert_eq!(status, 400, "attachment id 1 names no files[1]");
    let (status, body) = post_form(
        &fake,
        &[
            (
                "payload_json",
                None,
                payload(r#"{"id":0,"filename":"a.txt"}"#),
            ),
            file(MAX_UPLOAD_BYTES + 100),
        ],
    )
    .await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (413, Some(40005)),
        "over 10 MiB"
    );
    assert_eq!(body["message"], "Request entity too large");
    let (status, _) = post_form(
        &fake,
        &[
            (
                "payload_json",
                None,
                payload(r#"{"id":0,"filename":"a.txt"}"#),
            ),
            file(3),
        ],
    )
    .await;
    assert_eq!(status, 200, "a well-formed file message is accepted");
    assert_eq!(fake.uploads(CHANNEL).len(), 1);
}
