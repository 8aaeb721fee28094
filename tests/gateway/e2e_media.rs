//! Media end to end: photos, albums, voice notes, CSV files and PDFs sent
//! through the test channel reach the fake model as it would see them; files
//! go back with `send_file`; every bad file is refused clearly while other
//! chats go on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::io::Cursor;
use std::sync::Arc;

use image::{ImageFormat, Rgb, RgbImage};
use serde_json::{json, Value};
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;
use support::fake_stt::FakeStt;
use support::test_channel::{Download, Op};
use switchboard_platform::{AttachmentKind, FileKind};

fn png(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    RgbImage::from_pixel(w, h, Rgb([200, 30, 30]))
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

/// The text parts of the last user message of a request, joined.
fn user_text(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or_default();
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A fake model that says what it sees.
fn seeing_model(h: &Harness) {
    h.llm.set_responder(|request| {
        let seen: Vec<String> = support::images::in_request(request)
            .iter()
            .map(|b| support::images::describe(b))
            .collect();
        Reply::text(&format!(
            "I see {} image(s): {}",
            seen.len(),
            seen.join(", ")
        ))
    });
}

#[tokio::test]
async fn a_photo_with_a_caption_is_answered_from_what_the_model_sees() {
    let h = Harness::with(&[("LLM_VISION", "true")]).await;
    seeing_model(&h);
    let photo = png(3000, 2000);
    let a = h.channel.file(
        AttachmentKind::Image,
        Some("chart.png"),
        Download::Bytes(photo.clone()),
    );
    h.channel
        .dm_with(1, "what is in this chart?", vec![a])
        .await;
    let log = h
        .wait_for("the answer", |l| l.any_contains("I see 1 image"))
        .await;
    assert!(log.any_contains("I see 1 image(s): 1568x1045"), "{log}");

    let request = &h.requests(1).await[0];
    let said = user_text(request);
    assert!(said.contains("what is in this chart?"), "{said}");
    assert!(
        said.contains(
            "[image chart.png, 1568×1045 (sent as 3000×2000), saved as inbox/console-1/chart.png]"
        ),
        "{said}"
    );
    let copy = h.workspace().join("inbox/console-1/chart.png");
    assert_eq!(
        std::fs::read(copy).unwrap(),
        photo,
        "tools get the original file"
    );

    // The next turn still shows it (3 turns by default), history keeps only
    // the reference.
    h.channel.dm(1, "and now?").await;
    h.wait_for("the second answer", |l| {
        l.count_containing("I see 1 image") == 2
    })
    .await;
    h.idle().await;
    let session = h.session(1, 1).await;
    let history = h
        .running
        .store
        .history()
        .recent(&session, 50)
        .await
        .unwrap();
    let images: Vec<_> = history.iter().flat_map(|m| m.images.iter()).collect();
    assert_eq!(images.len(), 1, "the image is referenced from history");
    assert!(images[0].data.is_none(), "never its bytes");
    let stored = h
        .data_dir()
        .join("media")
        .join(&images[0].hash[..2])
        .join(&images[0].hash);
    assert!(stored.exists(), "the resized image is in the media store");
}

#[tokio::test]
async fn an_album_of_three_photos_reaches_the_model_as_one_message() {
    let h = Harness::with(&[("LLM_VISION", "true")]).await;
    seeing_model(&h);
    let album: Vec<_> = [(400, 300), (300, 400), (100, 100)]
        .into_iter()
        .map(|(w, hgt)| {
            h.channel
                .file(AttachmentKind::Image, None, Download::Bytes(png(w, hgt)))
        })
        .collect();
    h.channel.dm_with(1, "compare these", album).await;
    let log = h
        .wait_for("the answer", |l| l.any_contains("I see 3 image"))
        .await;
    assert!(log.any_contains("400x300"), "{log}");
    assert!(
        log.any_contains("300x400") && log.any_contains("100x100"),
        "{log}"
    );
    // Unnamed photos get names that do not clobber each other.
    for name in ["photo.png", "photo-2.png", "photo-3.png"] {
        assert!(
            h.workspace().join("inbox/console-1").join(name).exists(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_voice_note_is_transcribed_shown_and_answered() {
    let stt = FakeStt::start().await;
    stt.push("what's the weather in Lisbon");
    let h = Harness::with(&[
        ("STT_BASE_URL", &stt.base_url()),
        ("STT_MODEL", "whisper-large-v3"),
    ])
    .await;
    h.llm.push(Reply::text("Sunny, 21 °C."));
    let mut voice = b"OggS\0\x02".to_vec();
    voice.extend(std::iter::repeat_n(7u8, 4000));
    let mut a = h
        .channel
        .file(AttachmentKind::Voice, None, Download::Bytes(voice.clone()));
    a.duration_secs = Some(3);
    a.mime = Some("audio/ogg".into());
    h.channel.dm_with(1, "", vec![a]).await;
    let log = h
        .wait_for("the answer", |l| l.has_text("Sunny, 21 °C."))
        .await;

    let texts = log.texts();
    let heard = texts
        .iter()
        .position(|t| t == "🎤 “what's the weather in Lisbon”");
    let answer = texts.iter().position(|t| t == "Sunny, 21 °C.");
    assert!(
        heard.is_some() && heard < answer,
        "the transcript comes first: {texts:?}"
    );
    let said = user_text(&h.requests(1).await[0]);
    assert!(
        said.contains("(said in a voice message) what's the weather in Lisbon"),
        "{said}"
    );
    let sent = stt.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].model.as_str(), sent[0].file_name.as_str()),
        ("whisper-large-v3", "voice.ogg")
    );
    assert_eq!(sent[0].bytes, voice, "the audio is sent whole");
}

#[tokio::test]
async fn a_voice_note_over_the_length_limit_is_refused_before_download() {
    let stt = FakeStt::start().await;
    let h = Harness::with(&[
        ("STT_BASE_URL", &stt.base_url()),
        ("MEDIA_MAX_AUDIO_SECS", "60"),
    ])
    .await;
    let mut a = h.channel.file(
        AttachmentKind::Voice,
        None,
        Download::Bytes(b"OggS\0".to_vec()),
    );
    a.duration_secs = Some(300);
    h.channel.dm_with(1, "", vec![a]).await;
    let log = h
        .wait_for("the refusal", |l| l.any_contains("I transcribe up to"))
        .await;
    assert!(
        log.any_contains("🎤 your voice note is 5 min long; I transcribe up to 60 s"),
        "{log}"
    );
    h.idle().await;
    assert!(stt.requests().is_empty() && h.llm.requests().await.is_empty());
}

#[tokio::test]
async fn a_voice_note_without_transcription_says_how_to_enable_it() {
    let h = Harness::start().await;
    let a = h.channel.file(
        AttachmentKind::Voice,
        None,
        Download::Bytes(b"OggS\0".to_vec()),
    );
    h.channel.dm_with(1, "", vec![a]).await;
    let log = h
        .wait_for("the notice", |l| l.any_contains("STT_BASE_URL"))
        .await;
    h.idle().await;
    assert!(
        h.llm.requests().await.is_empty(),
        "nothing for the model\n{log}"
    );
}

#[tokio::test]
async fn a_csv_is_read_inline_and_analysed_with_exec_command() {
    let h = Harness::start().await;
    let csv = "region,sales\nnorth,120\nsouth,80\neast,45\n";
    let a = h.channel.file(
        AttachmentKind::Document,
        Some("sales.csv"),
        Download::Bytes(csv.as_bytes().to_vec()),
    );
    h.llm.push(Reply::tool_calls([(
        "c1",
        "exec_command",
        json!({"command": "awk -F, 'NR>1{s+=$2} END{print s}' inbox/console-1/sales.csv"}),
    )]));
    h.llm.push(Reply::text("Total sales: 245."));
    h.channel.dm_with(1, "total sales?", vec![a]).await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Total sales: 245."))
        .await;
    let requests = h.requests(2).await;
    let said = user_text(&requests[0]);
    assert!(
        said.contains("[file sales.csv (40 B), saved as inbox/console-1/sales.csv"),
        "{said}"
    );
    assert!(
        said.contains("north,120"),
        "small text files are inlined: {said}"
    );
    assert!(
        tool_result(&requests[1], "c1").contains("245"),
        "{:#}",
        requests[1]
    );
}

#[tokio::test]
async fn a_pdfs_text_reaches_the_model_with_its_pages_marked() {
    let h = Harness::with(&[READER]).await;
    h.llm.push(Reply::text("Revenue rose."));
    let pdf = sample_pdf(&["Revenue rose 12% in Q3", "Costs were flat"]);
    let a = h.channel.file(
        AttachmentKind::Document,
        Some("q3.pdf"),
        Download::Bytes(pdf),
    );
    h.channel.dm_with(1, "summarise", vec![a]).await;
    h.wait_for("the answer", |l| l.has_text("Revenue rose."))
        .await;
    let said = user_text(&h.requests(1).await[0]);
    assert!(
        said.contains("--- page 1 ---\nRevenue rose 12% in Q3"),
        "{said}"
    );
    assert!(said.contains("--- page 2 ---\nCosts were flat"), "{said}");
}

#[tokio::test]
async fn a_long_document_is_stored_with_a_preview_and_read_on_demand() {
    let h = Harness::with(&[("MEDIA_INLINE_CHARS", "100")]).await;
    let log_text: String = (0..200).map(|i| format!("line {i}: ok\n")).collect();
    let a = h.channel.file(
        AttachmentKind::Document,
        Some("app.log"),
        Download::Bytes(log_text.into_bytes()),
    );
    h.llm.set_responder(|request| {
        let said = user_text(request);
        let Some(id) = said
            .split("call_id=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
        else {
            return Reply::text("no preview note");
        };
        if request.to_string().contains("line 180") {
            Reply::text("found line 180")
        } else {
            Reply::tool_calls([(
                "r1",
                "read_stored_result",
                json!({"call_id": id, "offset": 1900, "limit": 400}),
            )])
        }
    });
    h.channel.dm_with(1, "anything odd?", vec![a]).await;
    h.wait_for("the answer", |l| l.has_text("found line 180"))
        .await;
    let said = user_text(&h.requests(1).await[0]);
    assert!(said.contains("the first 100 below"), "{said}");
    assert!(
        !said.contains("line 150"),
        "only the preview is inline: {said}"
    );
}

#[tokio::test]
async fn send_file_delivers_a_generated_png_as_a_photo() {
    let h = Harness::start().await;
    let chart = png(64, 48);
    std::fs::create_dir_all(h.workspace().join("out")).unwrap();
    std::fs::write(h.workspace().join("out/chart.png"), &chart).unwrap();
    h.llm.push(Reply::tool_calls([(
        "s1",
        "send_file",
        json!({"path": "out/chart.png", "caption": "Q3 chart"}),
    )]));
    h.llm.push(Reply::tool_calls([(
        "s2",
        "send_file",
        json!({"path": "../secret.txt"}),
    )]));
    h.llm.push(Reply::text("Sent."));
    h.channel.dm(1, "draw it").await;
    h.wait_for("the answer", |l| l.has_text("Sent.")).await;
    let files = h.channel.files_sent();
    assert_eq!(files.len(), 1, "{files:?}");
    let Op::File {
        chat,
        name,
        kind,
        caption,
        bytes,
    } = &files[0]
    else {
        unreachable!()
    };
    assert_eq!(
        (chat.chat.0, name.as_str(), *kind),
        (1, "chart.png", FileKind::Photo)
    );
    assert_eq!((caption.as_deref(), bytes), (Some("Q3 chart"), &chart));
    let requests = h.requests(3).await;
    assert!(
        tool_result(&requests[2], "s2").contains("outside your workspace folder"),
        "{:#}",
        requests[2]
    );
}

#[tokio::test]
async fn bad_files_are_refused_clearly_while_another_chat_is_answered() {
    let h = Harness::start().await;
    h.llm.set_responder(|request| {
        Reply::text(&format!(
            "answer to: {}",
            user_text(request).lines().next().unwrap_or_default()
        ))
    });
    let go = Arc::new(tokio::sync::Notify::new());
    // Held back until user 2 has been answered: a download never blocks
    // another chat.
    let held = h.channel.file(
        AttachmentKind::Document,
        Some("late.txt"),
        Download::Held(b"late but fine".to_vec(), Arc::clone(&go)),
    );
    h.channel.dm_with(1, "read this", vec![held]).await;
    h.channel.dm(2, "hello from two").await;
    h.wait_for("user 2's answer", |l| {
        l.has_text("answer to: hello from two")
    })
    .await;
    go.notify_one();
    h.wait_for("user 1's answer", |l| l.has_text("answer to: read this"))
        .await;

    let mut big = h.channel.file(
        AttachmentKind::Document,
        Some("huge.iso"),
        Download::Bytes(b"x".to_vec()),
    );
    big.size = Some(25 << 20);
    let zip = h.channel.file(
        AttachmentKind::Image,
        Some("cat.png"),
        Download::Bytes(b"PK\x03\x04\x14\0\0\0\0\0fake zip".to_vec()),
    );
    let bomb = h.channel.file(
        AttachmentKind::Image,
        Some("bomb.png"),
        Download::Bytes(png_header(20_000, 20_000)),
    );
    let stall = h.channel.file(
        AttachmentKind::Document,
        Some("slow.bin"),
        Download::Stall(b"abc".to_vec()),
    );
    for a in [big, zip, bomb, stall] {
        h.channel.dm_with(3, "", vec![a]).await;
    }
    let log = h
        .wait_for("four refusals", |l| l.texts_in(3).len() >= 4)
        .await;
    let told = log.texts_in(3).join("\n");
    assert!(
        told.contains("“huge.iso” is 25 MB; files up to 20 MB can be received here"),
        "{told}"
    );
    assert!(
        told.contains("“cat.png” is not an image: its contents are a ZIP archive"),
        "{told}"
    );
    assert!(
        told.contains(
            "“bomb.png”: the image is too large (20000 × 20000 pixels; the limit is 50 megapixels)"
        ),
        "{told}"
    );
    assert!(
        told.contains("The download of “slow.bin” stalled"),
        "{told}"
    );
    h.idle().await;
    assert_eq!(
        h.llm.requests().await.len(),
        2,
        "refused files start no turn"
    );
    // The session is still usable.
    h.channel.dm(3, "still there?").await;
    h.wait_for("user 3's answer", |l| l.has_text("answer to: still there?"))
        .await;
}

#[tokio::test]
async fn the_daily_allowance_is_per_user() {
    let h = Harness::with(&[("MEDIA_QUOTA_MB_PER_DAY", "1")]).await;
    h.llm.set_responder(|_| Reply::text("got it"));
    let part = vec![b'a'; 700 * 1024];
    let first = h.channel.file(
        AttachmentKind::Document,
        Some("a.txt"),
        Download::Bytes(part.clone()),
    );
    h.channel.dm_with(1, "one", vec![first]).await;
    h.wait_for("the first answer", |l| l.has_text("got it"))
        .await;
    let second = h.channel.file(
        AttachmentKind::Document,
        Some("b.txt"),
        Download::Bytes(part.clone()),
    );
    h.channel.dm_with(1, "", vec![second]).await;
    let log = h
        .wait_for("the refusal", |l| l.any_contains("daily file allowance"))
        .await;
    assert!(log.any_contains("(1 MB a day; 324 KB left)"), "{log}");
    let other = h.channel.file(
        AttachmentKind::Document,
        Some("c.txt"),
        Download::Bytes(part),
    );
    h.channel.dm_with(2, "mine", vec![other]).await;
    h.wait_for("user 2 answered", |l| l.count_containing("got it") == 2)
        .await;
}

#[tokio::test]
async fn an_endpoint_refusing_images_is_remembered_and_the_user_told() {
    let h = Harness::with(&[("LLM_VISION", "true")]).await;
    h.llm.without_vision();
    h.llm
        .set_responder(|_| Reply::text("Answered from the caption."));
    let photo = h
        .channel
        .file(AttachmentKind::Image, None, Download::Bytes(png(20, 20)));
    h.channel.dm_with(1, "what's this?", vec![photo]).await;
    let log = h
        .wait_for("the answer", |l| {
            l.any_contains("Answered from the caption.")
        })
        .await;
    assert!(log.any_contains("This model can't see images"), "{log}");
    let requests = h.llm.requests().await;
    assert_eq!(requests.len(), 2, "refused once, then text only");
    assert!(support::images::any_in(&requests[0]) && !support::images::any_in(&requests[1]));
    // Remembered for the run: the next photo is not sent as an image at all.
    let again = h
        .channel
        .file(AttachmentKind::Image, None, Download::Bytes(png(30, 30)));
    h.channel.dm_with(1, "and this?", vec![again]).await;
    let log = h
        .wait_for("the second answer", |l| {
            l.count_containing("Answered from the caption.") == 2
        })
        .await;
    assert!(
        log.any_contains("🖼️ This model can't see images; I saved the file"),
        "the user is told again: {log}"
    );
    let requests = h.llm.requests().await;
    assert_eq!(requests.len(), 3);
    assert!(!support::images::any_in(&requests[2]));
    assert!(
        user_text(&requests[2]).contains("this model cannot see images"),
        "{}",
        user_text(&requests[2])
    );
}

/// A PNG header claiming `w`×`h` pixels, with one tiny IDAT chunk.
fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = png.len();
        png.extend_from_slice(kind);
        png.extend_from_slice(data);
        let crc = crc32(&png[start..]);
        png.extend_from_slice(&crc.to_be_bytes());
    };
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", b"\x78\x9c\x63\x00\x00\x00\x01\x00\x01");
    chunk(b"IEND", b"");
    png
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The document reader: the test binary runs the gateway in-process, so the
/// real binary is named for `switchboard extract-document`.
const READER: (&str, &str) = ("SWITCHBOARD_HELPER_BIN", env!("CARGO_BIN_EXE_switchboard"));

/// Issue 38: a PDF nested 100,000 deep aborted the gateway (and each restart
/// after it). Sent over the fake Telegram, it is refused with a sentence; the
/// next message is answered by the same gateway.
#[tokio::test]
async fn a_pdf_nested_100000_deep_is_refused_and_the_gateway_answers_on() {
    use std::collections::HashMap;
    use support::fake_llm::{FakeLlm, FAKE_MODEL};
    use support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN};
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vars: HashMap<&str, String> = HashMap::from([
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", FAKE_MODEL.to_owned()),
        ("DATA_DIR", dir.path().display().to_string()),
        ("ACCESS_POLICY", "allowlist".to_owned()),
        ("TELEGRAM_ALLOWED_USERS", "900".to_owned()),
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()),
        ("TELEGRAM_API_URL", tg.api_url()),
        ("CHAT_VERBOSITY", "off".to_owned()),
        (READER.0, READER.1.to_owned()),
    ]);
    let config = switchboard::Config::from_lookup(|k| vars.get(k).cloned()).unwrap();
    let mut tcfg = config.platforms.telegram.clone().expect("Telegram enabled");
    tcfg.poll_timeout_secs = 1;
    tcfg.limits = support::telegram_run::fast_limits();
    let adapter = Arc::new(
        switchboard_telegram::TelegramAdapter::connect(tcfg)
            .await
            .unwrap(),
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    let adapters: Vec<Arc<dyn switchboard_platform::PlatformAdapter>> = vec![adapter];
    let running = switchboard::start(&config, adapters, shutdown.clone())
        .await
        .unwrap();
    let wait = std::time::Duration::from_secs(30);

    let ann = FakeUser::new(900, "Ann");
    let nested = crate::media_documents::nested_pdf();
    let file_id = tg.host_file(nested.clone());
    tg.media(
        Where::Dm,
        &ann,
        json!({"document": {"file_id": file_id, "file_unique_id": "unested", "file_name": "report.pdf",
            "mime_type": "application/pdf", "file_size": nested.len()}}),
    );
    let refusal = "📄 I saved “report.pdf” but could not read its text \
        (its structure nests more than 256 levels deep).";
    assert!(
        tg.wait_until(wait, |t| t
            .bot_messages(900)
            .iter()
            .any(|m| m.text == refusal))
            .await,
        "no refusal: {:?}",
        tg.bot_messages(900)
    );
    llm.push(Reply::text("Still here."));
    tg.message(Where::Dm, &ann, "are you still there?");
    assert!(
        tg.wait_until(wait, |t| t
            .bot_messages(900)
            .iter()
            .any(|m| m.text == "Still here."))
            .await,
        "no answer: {:?}",
        tg.bot_messages(900)
    );
    let requests = llm.requests().await;
    assert_eq!(requests.len(), 1, "the refused file started no turn");
    assert!(user_text(&requests[0]).contains("are you still there?"));
    shutdown.cancel();
    let _ = tokio::time::timeout(wait, running.wait()).await;
}

/// A PDF with one line of text per page.
fn sample_pdf(pages: &[&str]) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{dictionary, Document, Object, Stream};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(
        dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" },
    );
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for text in pages {
        let content = Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Td", vec![72.into(), 720.into()]),
                Operation::new("Tj", vec![Object::string_literal(*text)]),
                Operation::new("ET", vec![]),
            ],
        };
        let stream = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => stream, "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        });
        kids.push(page.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

/// A background task's product goes back with its completion: the
/// notification turn hands the file over with `send_file`.
#[tokio::test]
async fn a_background_tasks_file_goes_back_with_its_notification() {
    let h = Harness::start().await;
    h.llm.push(Reply::tool_calls([(
        "bg",
        "exec_command",
        json!({"command": "mkdir -p out && printf 'a,b\\n1,2\\n' > out/report.csv", "background": true}),
    )]));
    h.llm.push(Reply::text("Started."));
    h.channel.dm(1, "make the report in the background").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the first answer", |l| l.has_text("Started."))
        .await;
    // The notification turn: the model sees the task finished and sends the file.
    h.llm.push(Reply::tool_calls([(
        "send",
        "send_file",
        json!({"path": "out/report.csv", "caption": "your report"}),
    )]));
    h.llm.push(Reply::text("Here is the report."));
    h.wait_for("the notification answer", |l| {
        l.has_text("Here is the report.")
    })
    .await;
    let files = h.channel.files_sent();
    let Some(Op::File {
        name,
        kind,
        caption,
        bytes,
        ..
    }) = files.first()
    else {
        panic!("no file sent: {files:?}")
    };
    assert_eq!((name.as_str(), *kind), ("report.csv", FileKind::Document));
    assert_eq!(
        (caption.as_deref(), bytes.as_slice()),
        (Some("your report"), b"a,b\n1,2\n".as_slice())
    );
}
