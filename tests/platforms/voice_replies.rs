//! Voice replies end to end: the real gateway with the fake LLM, the fake
//! speech-to-text and text-to-speech servers and the real Telegram and
//! Discord adapters against their fakes. A voice note is answered in text
//! and then in kind; `/voice on` speaks text answers too, `/voice off`
//! stops it; a speech service that fails leaves the text answer and one
//! line saying so; the speech key reaches neither the chat nor the logs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::discord_e2e::{self, ALICE, CHANNEL};
use crate::support;
use crate::telegram_e2e::{ann, E2e};
use crate::telegram_updates::logs_text;

use serde_json::json;
use std::time::Duration;
use support::fake_discord::{FakeDiscord, FakeFile, UserMessage};
use support::fake_llm::Reply;
use support::fake_stt::FakeStt;
use support::fake_telegram::{FakeTelegram, FileField, StoredDocument, Where};
use support::fake_tts::{FakeTts, TtsMode, VOICE_OGG};
use switchboard::media::{SttConfig, TtsConfig};
use switchboard_platform::{OggOpus, Secret};

const TTS_KEY: &str = "sk-tts-0123456789abcdef";
const FAILED: &str = "No voice reply this time";

fn speech(stt: &FakeStt, tts: &FakeTts) -> impl FnOnce(&mut switchboard::Config) {
    let (stt, tts) = (stt.base_url(), tts.base_url());
    move |c| {
        c.media.stt = Some(SttConfig {
            base_url: stt,
            model: "whisper-1".into(),
            api_key: None,
            timeout: Duration::from_secs(10),
        });
        c.media.tts = Some(TtsConfig {
            base_url: tts,
            model: "tts-1".into(),
            voice: "nova".into(),
            api_key: Some(Secret::new(TTS_KEY)),
            timeout: Duration::from_secs(10),
        });
    }
}

fn voices(tg: &FakeTelegram, chat: i64) -> Vec<StoredDocument> {
    tg.documents(chat)
        .into_iter()
        .filter(|d| d.kind == FileField::Voice)
        .collect()
}

fn said(tg: &FakeTelegram, chat: i64, needle: &str) -> usize {
    tg.bot_messages(chat)
        .iter()
        .filter(|m| m.text.contains(needle))
        .count()
}

async fn settle(e: &E2e) {
    if let Some(r) = &e.running {
        tokio::time::timeout(Duration::from_secs(20), r.idle())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn telegram_a_voice_note_is_answered_in_text_then_in_kind() {
    logs_text();
    let (stt, tts) = (FakeStt::start().await, FakeTts::start().await);
    tts.require_key(TTS_KEY);
    stt.push("what's the weather in Lisbon");
    let e = E2e::start(speech(&stt, &tts)).await;
    e.llm.push(Reply::text("**Sunny**, 21 °C."));
    let file_id = e.tg.host_file(VOICE_OGG.to_vec());
    e.tg.media(
        Where::Dm,
        &ann(),
        json!({"voice": {"file_id": file_id, "file_unique_id": "v1", "duration": 2,
            "mime_type": "audio/ogg", "file_size": VOICE_OGG.len()}}),
    );
    e.wait("a voice reply", |t| !voices(t, 900).is_empty())
        .await;
    settle(&e).await;

    let voice = &voices(&e.tg, 900)[0];
    assert_eq!(voice.bytes, VOICE_OGG, "the speech service's audio, whole");
    let calls = e.tg.calls();
    let answer = calls.iter().position(|c| {
        c.method == "SendMessage" && c.params["text"].as_str().unwrap_or("").contains("21 °C")
    });
    let spoken = calls.iter().position(|c| c.method == "SendVoice");
    assert!(answer.is_some() && answer < spoken, "text first: {calls:?}");
    let sent = &calls[spoken.unwrap()].params;
    assert_eq!(sent["duration"], "2", "1.5 s, in whole seconds");
    assert_eq!(voice.file_name, "voice.ogg");
    let asked = tts.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (
            asked[0].input.as_str(),
            asked[0].voice.as_str(),
            asked[0].format.as_str()
        ),
        ("Sunny, 21 °C.", "nova", "opus"),
        "plain words, Ogg Opus"
    );
    assert_eq!(said(&e.tg, 900, FAILED), 0);
    // A typed message is answered in text only (in kind).
    e.llm.push(Reply::text("Typed back."));
    e.tg.message(Where::Dm, &ann(), "and tomorrow?");
    e.wait("the typed answer", |t| said(t, 900, "Typed back.") == 1)
        .await;
    settle(&e).await;
    assert_eq!(voices(&e.tg, 900).len(), 1);
    assert_eq!(tts.requests().len(), 1);
    assert!(
        !logs_text().contains(TTS_KEY),
        "the speech key is never logged"
    );
    e.stop().await;
}

#[tokio::test]
async fn telegram_voice_on_speaks_typed_answers_and_off_stops_it() {
    let (stt, tts) = (FakeStt::start().await, FakeTts::start().await);
    let e = E2e::start(speech(&stt, &tts)).await;
    e.tg.message(Where::Dm, &ann(), "/voice on");
    e.wait("the /voice answer", |t| {
        said(t, 900, "Voice replies: **on**") + said(t, 900, "Voice replies: on") > 0
    })
    .await;
    e.llm.push(Reply::text("Spoken too."));
    e.tg.message(Where::Dm, &ann(), "hello");
    e.wait("a voice reply", |t| voices(t, 900).len() == 1).await;
    settle(&e).await;
    assert_eq!(
        said(&e.tg, 900, "Spoken too."),
        1,
        "the text is sent as well"
    );
    e.tg.message(Where::Dm, &ann(), "/voice");
    e.wait("the voice status", |t| {
        said(t, 900, "Voice replies here") == 1
    })
    .await;
    assert!(e
        .tg
        .bot_messages(900)
        .iter()
        .any(|m| m.text.contains("Voice replies here: on")));
    e.tg.message(Where::Dm, &ann(), "/voice off");
    e.wait("the /voice off answer", |t| said(t, 900, "text only") == 1)
        .await;
    e.llm.push(Reply::text("Text only now."));
    e.tg.message(Where::Dm, &ann(), "again");
    e.wait("the answer", |t| said(t, 900, "Text only now.") == 1)
        .await;
    settle(&e).await;
    assert_eq!(voices(&e.tg, 900).len(), 1, "no voice after /voice off");
    assert_eq!(tts.requests().len(), 1);
    e.stop().await;
}

#[tokio::test]
async fn telegram_a_failing_speech_service_leaves_the_text_and_one_line() {
    logs_text();
    let (stt, tts) = (FakeStt::start().await, FakeTts::start().await);
    let e = E2e::start(speech(&stt, &tts)).await;
    e.tg.message(Where::Dm, &ann(), "/voice on");
    e.wait("the /voice answer", |t| {
        said(t, 900, "**on**") + said(t, 900, "on —") > 0
    })
    .await;
    let cases = [
        (TtsMode::Down, "HTTP 503"),
        (TtsMode::Garbage, "can't play"),
        (TtsMode::Huge, "more than 16 MB"),
    ];
    for (i, (mode, why)) in cases.into_iter().enumerate() {
        tts.set_mode(mode);
        let answer = format!("Answer number {i}.");
        e.llm.push(Reply::text(&answer));
        e.tg.message(Where::Dm, &ann(), &format!("question {i}"));
        e.wait("the fallback line", |t| said(t, 900, FAILED) == i + 1)
            .await;
        settle(&e).await;
        assert_eq!(said(&e.tg, 900, &answer), 1, "{mode:?}: the text answer");
        let line =
            e.tg.bot_messages(900)
                .into_iter()
                .rev()
                .find(|m| m.text.contains(FAILED))
                .unwrap();
        assert!(line.text.contains(why), "{mode:?}: {}", line.text);
        assert!(!line.text.contains(TTS_KEY));
    }
    assert!(voices(&e.tg, 900).is_empty());
    assert_eq!(said(&e.tg, 900, FAILED), 3, "one line per failed reply");
    let logs = logs_text();
    assert!(logs.contains("no voice reply"), "the failure is logged");
    assert!(!logs.contains(TTS_KEY));
    e.stop().await;
}

fn voice_messages(d: &FakeDiscord) -> Vec<serde_json::Value> {
    d.bot_messages(CHANNEL)
        .into_iter()
        .filter(|m| m["flags"].as_u64().is_some_and(|f| f & (1 << 13) != 0))
        .collect()
}

async fn discord_with_speech(stt: &FakeStt, tts: &FakeTts) -> discord_e2e::E2e {
    tts.require_key(TTS_KEY);
    let (stt_url, tts_url) = (stt.base_url(), tts.base_url());
    discord_e2e::E2e::with(&[
        ("STT_BASE_URL", &stt_url),
        ("TTS_BASE_URL", &tts_url),
        ("TTS_API_KEY", TTS_KEY),
        ("TTS_VOICE", "echo"),
    ])
    .await
}

#[tokio::test]
async fn discord_a_voice_message_is_answered_in_text_then_with_a_voice_message() {
    let (stt, tts) = (FakeStt::start().await, FakeTts::start().await);
    stt.push("remind me what we said");
    let e = discord_with_speech(&stt, &tts).await;
    e.llm.push(Reply::text("We said Tuesday."));
    e.say(
        UserMessage::new(CHANNEL, ALICE, "")
            .mentioning_bot()
            .with_file(FakeFile::voice(VOICE_OGG.to_vec(), 1.5)),
    );
    e.wait("a voice message", |d| !voice_messages(d).is_empty())
        .await;
    e.quiet().await;
    let texts = discord_e2e::texts(&e.discord, CHANNEL);
    let answer = texts.iter().position(|t| t == "We said Tuesday.");
    let voice = voice_messages(&e.discord).remove(0);
    let voice_at = e
        .discord
        .bot_messages(CHANNEL)
        .iter()
        .position(|m| m["id"] == voice["id"]);
    assert!(
        answer.is_some() && answer < voice_at,
        "text first: {texts:?}"
    );
    assert_eq!(voice["content"], "", "a voice message has no content");
    let uploads = e.discord.uploads(CHANNEL);
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].filename, "voice-message.ogg");
    assert_eq!(uploads[0].bytes, VOICE_OGG);
    let info = OggOpus::read(VOICE_OGG).unwrap();
    assert!((info.duration_secs - 1.5).abs() < 1e-9);
    assert_eq!(tts.requests()[0].voice, "echo");
    assert!(!texts
        .iter()
        .any(|t| t.contains(TTS_KEY) || t.contains(FAILED)));
    e.stop().await;
}

#[tokio::test]
async fn discord_voice_on_with_the_speech_service_down_is_text_and_one_line() {
    let (stt, tts) = (FakeStt::start().await, FakeTts::start().await);
    let e = discord_with_speech(&stt, &tts).await;
    e.say(UserMessage::new(CHANNEL, ALICE, "/voice on").mentioning_bot());
    e.wait("the /voice answer", |d| {
        discord_e2e::texts(d, CHANNEL)
            .iter()
            .any(|t| t.contains("**on**") || t.contains("on —"))
    })
    .await;
    e.llm.push(Reply::text("Spoken, if it could."));
    e.say(UserMessage::new(CHANNEL, ALICE, "say something").mentioning_bot());
    e.wait("a voice message", |d| voice_messages(d).len() == 1)
        .await;
    tts.set_mode(TtsMode::Down);
    e.llm.push(Reply::text("Text this time."));
    e.say(UserMessage::new(CHANNEL, ALICE, "and again").mentioning_bot());
    e.wait("the fallback line", |d| {
        discord_e2e::texts(d, CHANNEL)
            .iter()
            .any(|t| t.contains(FAILED))
    })
    .await;
    e.quiet().await;
    let texts = discord_e2e::texts(&e.discord, CHANNEL);
    assert!(texts.iter().any(|t| t == "Text this time."), "{texts:?}");
    assert_eq!(texts.iter().filter(|t| t.contains(FAILED)).count(), 1);
    assert_eq!(voice_messages(&e.discord).len(), 1);
    e.stop().await;
}
