//! Voice replies in `switchboard chat` (piped): with `TTS_BASE_URL` and
//! `/voice on`, an answer is printed and then its voice note is written
//! into the console's outbox, its path printed; a speech service that
//! fails costs one line, and the speech key is in neither output.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console;
use crate::support;

use console::piped::Env;
use support::fake_llm::{FakeLlm, Reply};
use support::fake_tts::{FakeTts, TtsMode, VOICE_OGG};

const KEY: &str = "sk-console-tts-9876543210";

async fn env_with_speech(llm: &FakeLlm, tts: &FakeTts) -> Env {
    let mut env = Env::new(&llm.base_url());
    env.vars.push(("TTS_BASE_URL".into(), tts.base_url()));
    env.vars.push(("TTS_API_KEY".into(), KEY.into()));
    env.vars.push(("RUST_LOG".into(), "debug".into()));
    tts.require_key(KEY);
    env
}

#[tokio::test]
async fn voice_on_writes_the_spoken_answer_and_prints_its_path() {
    let (llm, tts) = (FakeLlm::start().await, FakeTts::start().await);
    llm.push(Reply::text("Here is the answer."));
    let env = env_with_speech(&llm, &tts).await;
    let done = env.chat("/voice on\nhello\n").await;

    assert_eq!(done.status.code(), Some(0), "{done}");
    let out = &done.stdout;
    let answer = out.find("Here is the answer.").expect("the text answer");
    let voice = out.find("🔊 Voice reply (1.5 s)").expect("the voice note");
    assert!(answer < voice, "text first\n{done}");
    let path = out[voice..]
        .lines()
        .find_map(|l| l.strip_prefix("📎 file saved to "))
        .expect("the path is printed");
    assert_eq!(std::fs::read(path.trim()).unwrap(), VOICE_OGG);
    assert_eq!(tts.requests()[0].input, "Here is the answer.");
    assert!(!out.contains(KEY) && !done.stderr.contains(KEY), "{done}");
}

#[tokio::test]
async fn a_speech_service_that_fails_leaves_the_text_and_one_line() {
    let (llm, tts) = (FakeLlm::start().await, FakeTts::start().await);
    tts.set_mode(TtsMode::Down);
    llm.push(Reply::text("Only in text."));
    let env = env_with_speech(&llm, &tts).await;
    let done = env.chat("/voice on\nhello\n").await;

    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Only in text."), "{done}");
    assert_eq!(
        done.stdout.matches("No voice reply this time").count(),
        1,
        "{done}"
    );
    assert!(!done.stdout.contains("file saved to"), "{done}");
    assert!(
        !done.stdout.contains(KEY) && !done.stderr.contains(KEY),
        "{done}"
    );
}
