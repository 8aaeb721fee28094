//! The fakes behind the voice-reply tests are as strict as the real APIs:
//! the speech server refuses bad JSON, unknown fields and formats and
//! answers a real Ogg Opus file; Telegram's `sendVoice` refuses a missing
//! or non-Ogg file; Discord refuses a voice message with content, without
//! its waveform or duration, or without an audio file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use support::fake_discord::{FakeDiscord, TOKEN as DISCORD_TOKEN};
use support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN as TELEGRAM_TOKEN};
use support::fake_tts::{FakeTts, VOICE_OGG};
use switchboard_platform::OggOpus;

const CHANNEL: u64 = 1_200_000_000_000_000_021;

/// One form part: name, filename, content type, data.
type FormPart<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a [u8]);

/// A multipart body of `parts`.
fn form(boundary: &str, parts: &[FormPart<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, filename, content_type, data) in parts {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"").as_bytes(),
        );
        if let Some(f) = filename {
            body.extend_from_slice(format!("; filename=\"{f}\"").as_bytes());
        }
        if let Some(t) = content_type {
            body.extend_from_slice(format!("\r\nContent-Type: {t}").as_bytes());
        }
        body.extend_from_slice(b"\r\n\r\n");
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

#[tokio::test]
async fn the_fake_speech_server_checks_requests_and_speaks_ogg_opus() {
    let tts = FakeTts::start().await;
    let client = reqwest::Client::new();
    let url = format!("{}/audio/speech", tts.base_url());
    let post = |body: Value| client.post(&url).json(&body).send();
    let ok =
        json!({"model": "tts-1", "input": "Hello.", "voice": "alloy", "response_format": "opus"});
    let r = post(ok.clone()).await.unwrap();
    assert_eq!(r.status(), 200);
    let audio = r.bytes().await.unwrap();
    assert_eq!(audio.as_ref(), VOICE_OGG);
    let info = OggOpus::read(&audio).unwrap();
    assert!((info.duration_secs - 1.5).abs() < 1e-9, "{info:?}");
    assert_eq!(info.packet_sizes, vec![3; 75], "75 frames of 20 ms");

    let bad_json = client
        .post(&url)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_json.status(), 400);
    for (mut body, why) in [
        (ok.clone(), "format"),
        (ok.clone(), "unknown field"),
        (ok.clone(), "no voice"),
        (ok.clone(), "input too long"),
    ] {
        match why {
            "format" => body["response_format"] = json!("ogg"),
            "unknown field" => body["stream"] = json!(true),
            "no voice" => {
                body.as_object_mut().unwrap().remove("voice");
            }
            _ => body["input"] = json!("a".repeat(4097)),
        }
        let r = post(body).await.unwrap();
        assert_eq!(r.status(), 400, "{why}");
    }
    tts.require_key("sk-right");
    assert_eq!(post(ok).await.unwrap().status(), 401, "a key is required");
    assert_eq!(tts.requests().len(), 1, "only the valid request counts");
}

async fn telegram_voice(fake: &FakeTelegram, parts: &[FormPart<'_>]) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{}bot{TELEGRAM_TOKEN}/sendVoice", fake.api_url()))
        .header("content-type", "multipart/form-data; boundary=XyZ")
        .body(form("XyZ", parts))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (
        status,
        body["description"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn the_fake_telegram_refuses_a_voice_that_is_missing_or_not_ogg_opus() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    fake.ensure_chat(Where::Dm, &FakeUser::new(900, "Ann"));
    let chat = ("chat_id", None, None, b"900".as_slice());
    let (status, why) = telegram_voice(&fake, &[chat]).await;
    assert_eq!(
        (status, why.as_str()),
        (400, "Bad Request: there is no voice in the request")
    );
    let mp3 = ("voice", Some("a.mp3"), None, b"ID3\x04 not ogg".as_slice());
    let (status, why) = telegram_voice(&fake, &[chat, mp3]).await;
    assert_eq!(status, 400);
    assert!(why.contains("OGG file encoded with OPUS"), "{why}");
    let vorbis = [b"OggS\0\x02".as_slice(), &[0; 20], &[1, 30], b"\x01vorbis"].concat();
    let (status, _) = telegram_voice(&fake, &[chat, ("voice", Some("v.ogg"), None, &vorbis)]).await;
    assert_eq!(status, 400, "Ogg, but not Opus");
    let ok = ("voice", Some("voice.ogg"), None, VOICE_OGG);
    let (status, _) = telegram_voice(&fake, &[chat, ok, ("duration", None, None, b"2")]).await;
    assert_eq!(status, 200);
    assert_eq!(fake.documents(900).len(), 1);
}

async fn discord_post(
    fake: &FakeDiscord,
    payload: Value,
    file: Option<(&str, &str)>,
) -> (u16, Value) {
    let payload = payload.to_string();
    let mut parts = vec![("payload_json", None, None, payload.as_bytes())];
    if let Some((name, content_type)) = file {
        parts.push(("files[0]", Some(name), Some(content_type), VOICE_OGG));
    }
    let response = reqwest::Client::new()
        .post(format!(
            "{}/api/v10/channels/{CHANNEL}/messages",
            fake.api_url
        ))
        .header("authorization", format!("Bot {DISCORD_TOKEN}"))
        .header("content-type", "multipart/form-data; boundary=B0undary")
        .body(form("B0undary", &parts))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn the_fake_discord_refuses_voice_messages_discord_refuses() {
    let fake = FakeDiscord::start().await;
    fake.add_text_channel(CHANNEL);
    let voice = |attachment: Value| json!({"flags": 8192, "attachments": [attachment]});
    let good =
        json!({"id": 0, "filename": "voice-message.ogg", "duration_secs": 1.5, "waveform": "AAAA"});
    let audio = Some(("voice-message.ogg", "audio/ogg"));
    let code = |(status, body): (u16, Value)| (status, body["code"].as_u64().unwrap_or(0));

    let mut with_content = voice(good.clone());
    with_content["content"] = json!("the answer");
    assert_eq!(
        code(discord_post(&fake, with_content, audio).await),
        (400, 50159)
    );
    let mut no_waveform = good.clone();
    no_waveform.as_object_mut().unwrap().remove("waveform");
    assert_eq!(
        code(discord_post(&fake, voice(no_waveform), audio).await),
        (400, 50161)
    );
    let mut no_duration = good.clone();
    no_duration.as_object_mut().unwrap().remove("duration_secs");
    assert_eq!(
        code(discord_post(&fake, voice(no_duration), audio).await),
        (400, 50161)
    );
    let mut long_waveform = good.clone();
    long_waveform["waveform"] = json!(base64_of(&[7; 300]));
    assert_eq!(
        code(discord_post(&fake, voice(long_waveform), audio).await),
        (400, 50161)
    );
    let text_file = Some(("voice-message.txt", "text/plain"));
    assert_eq!(
        code(discord_post(&fake, voice(good.clone()), text_file).await),
        (400, 50160)
    );
    assert!(fake.uploads(CHANNEL).is_empty());

    let (status, created) = discord_post(&fake, voice(good), audio).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["flags"], 8192);
    assert_eq!(fake.uploads(CHANNEL)[0].bytes, VOICE_OGG);
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn voice_settings_are_stored_on_postgres_too() {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL not set: skipped");
        return;
    };
    let url = support::postgres::fresh_postgres(&admin).await;
    let store = switchboard::store::Store::open(&url).await.unwrap();
    let key = switchboard::store::SessionKey {
        platform: switchboard_platform::Platform::Discord,
        chat: switchboard_platform::ChatId(5),
        thread: None,
        user: switchboard_platform::UserId(1),
    };
    let session = store.sessions().open(&key).await.unwrap();
    assert_eq!(store.voice_reply(&session).await.unwrap(), (None, false));
    store.set_voice_in(&session, true).await.unwrap();
    store.set_voice_reply(&session, Some("off")).await.unwrap();
    assert_eq!(
        store.voice_reply(&session).await.unwrap(),
        (Some("off".to_owned()), true)
    );
    store.set_voice_reply(&session, None).await.unwrap();
    store.set_voice_in(&session, false).await.unwrap();
    assert_eq!(store.voice_reply(&session).await.unwrap(), (None, false));
}
