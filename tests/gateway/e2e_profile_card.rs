//! End to end over the fake Telegram Bot API: a reflection note that finds
//! a profile change proposes it; the card under the user's next direct
//! answer shows it verbatim with Apply / Dismiss; another user's press, a
//! forged one and a second one are refused with a clear answer; after a
//! restart Apply still works and writes the memory; a dismissed suggestion
//! is never proposed again (SQLite, and PostgreSQL when configured).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use chrono::{Duration as Days, Utc};
use serde_json::Value;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::fake_llm::{FakeLlm, Reply, FAKE_MODEL};
use support::fake_telegram::{FakeTelegram, FakeUser, StoredMessage, Where, TOKEN};
use switchboard::llm::{EndpointConfig, ModelInfo, OpenAiProvider};
use switchboard::memory::{Extractor, MemoryBook, MemoryConfig};
use switchboard::store::{MemoryKind, MemoryOwner, Store};
use switchboard::Config;
use switchboard_platform::{Platform, PlatformAdapter, Quota, UserId};
use switchboard_telegram::{TelegramAdapter, TelegramLimits};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);
const METRIC: &str = "Prefers metric units (kilometres, kilograms) in every answer.";
const FRIDAYS: &str = "Works from home on Fridays.";

struct Gateway {
    running: switchboard::Running,
    shutdown: CancellationToken,
}

async fn start(config: &Config) -> Gateway {
    let mut tcfg = config.platforms.telegram.clone().expect("Telegram enabled");
    tcfg.poll_timeout_secs = 1;
    tcfg.limits = TelegramLimits {
        per_chat: Quota::per_second(NonZeroU32::new(50).unwrap()),
        per_group: Quota::per_second(NonZeroU32::new(1_000).unwrap()),
        per_bot: Quota::per_second(NonZeroU32::new(1_000).unwrap()),
    };
    let adapter = Arc::new(TelegramAdapter::connect(tcfg).await.unwrap());
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![adapter];
    let running = switchboard::start(config, adapters, shutdown.clone())
        .await
        .unwrap();
    Gateway { running, shutdown }
}

impl Gateway {
    async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(WAIT, self.running.wait())
            .await
            .unwrap();
    }
}

fn is_reflection(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You write a short private reflection note"))
}

fn extractor(store: &Store, llm: &FakeLlm) -> Extractor {
    let config = EndpointConfig::new(llm.base_url(), ModelInfo::new(FAKE_MODEL, None));
    Extractor::new(
        MemoryBook::new(store.clone(), MemoryConfig::default()),
        Arc::new(OpenAiProvider::new(config).unwrap()),
    )
}

/// The card's buttons' data, Apply first.
fn buttons(card: &StoredMessage) -> (String, String) {
    let markup = card.reply_markup.as_ref().expect("card has a keyboard");
    let data: Vec<String> = markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().into_iter().flatten())
        .filter_map(|b| b["callback_data"].as_str().map(str::to_owned))
        .collect();
    let find = |end: &str| {
        data.iter()
            .find(|d| d.starts_with("pf:") && d.ends_with(end))
            .cloned()
            .unwrap_or_else(|| panic!("no {end} button: {markup}"))
    };
    (find(":a"), find(":d"))
}

/// The private answer to the press `id`.
async fn answer_to(tg: &FakeTelegram, id: &str) -> String {
    let found = |t: &FakeTelegram| {
        t.calls_to("answerCallbackQuery")
            .into_iter()
            .find(|c| c.params["callback_query_id"] == id)
            .map(|c| c.params["text"].as_str().unwrap_or_default().to_owned())
    };
    assert!(
        tg.wait_until(WAIT, |t| found(t).is_some()).await,
        "press {id} not answered"
    );
    found(tg).unwrap()
}

/// The profile cards in Ann's chat.
fn cards(tg: &FakeTelegram) -> Vec<StoredMessage> {
    tg.bot_messages(900)
        .into_iter()
        .filter(|m| m.text.contains("Profile update"))
        .collect()
}

/// Ann writes; returns once the answer (and any card under it) is out.
async fn say(tg: &FakeTelegram, ann: &FakeUser, text: &str, answers: usize) {
    tg.message(Where::Dm, ann, text);
    let done = tg
        .wait_until(WAIT, |t| {
            t.bot_messages(900)
                .iter()
                .filter(|m| m.text == "Noted!")
                .count()
                >= answers
        })
        .await;
    assert!(done, "no answer to {text:?}");
}

/// Reflects at `at` once Ann's messages since `since` are stored.
async fn reflect(
    store: &Store,
    llm: &FakeLlm,
    since: chrono::DateTime<Utc>,
    at: chrono::DateTime<Utc>,
) -> Vec<switchboard::memory::Reflection> {
    let owner = MemoryOwner::new(Platform::Telegram, UserId(900));
    for _ in 0..200 {
        let stored = store
            .memories()
            .messages_of_user_since(owner, since, 50)
            .await;
        if stored.is_ok_and(|m| m.len() >= 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    extractor(store, llm)
        .reflect_due(Days::hours(6), at)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reflection_proposes_a_profile_change_on_a_card_that_survives_a_restart() {
    let mut backends = vec![None];
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        backends.push(Some(support::postgres::fresh_postgres(&admin).await));
    }
    for db in backends {
        run_on(db).await;
    }
}

async fn run_on(db: Option<String>) {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut vars: HashMap<&str, String> = HashMap::from([
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", FAKE_MODEL.to_owned()),
        ("DATA_DIR", dir.path().display().to_string()),
        ("ACCESS_POLICY", "allowlist".to_owned()),
        ("TELEGRAM_ALLOWED_USERS", "900,901".to_owned()),
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()),
        ("TELEGRAM_API_URL", tg.api_url()),
        ("MEMORY_LEARN", "off".to_owned()),
        ("REFLECTION_EVERY_HOURS", "off".to_owned()),
        ("FEEDBACK_BUTTONS", "false".to_owned()),
        ("CHAT_VERBOSITY", "off".to_owned()),
    ]);
    if let Some(url) = &db {
        vars.insert("DATABASE_URL", url.clone());
    }
    let config = Config::from_lookup(|k| vars.get(k).cloned()).unwrap();
    // What the next reflection proposes.
    let proposal = Arc::new(Mutex::new(METRIC.to_owned()));
    let proposed = Arc::clone(&proposal);
    llm.set_responder(move |req| {
        if is_reflection(req) {
            let update = proposed.lock().unwrap().clone();
            Reply::text(
                &serde_json::json!({"note": "The user plans trips.", "open_loops": [],
                    "risks": [], "profile_update": update})
                .to_string(),
            )
        } else {
            Reply::text("Noted!")
        }
    });
    let gw = start(&config).await;
    let store = gw.running.store.clone();
    let (ann, bob) = (FakeUser::new(900, "Ann"), FakeUser::new(901, "Bob"));

    // The reflector's clock starts, Ann talks, a note is due and proposes.
    let t0 = Utc::now() - Days::hours(30);
    say(&tg, &ann, "Hi, planning a trip to Lyon", 1).await;
    assert!(
        reflect(&store, &llm, t0, t0).await.is_empty(),
        "the clock starts"
    );
    say(
        &tg,
        &ann,
        "Please always give me kilometres and kilograms",
        2,
    )
    .await;
    let notes = reflect(&store, &llm, t0, t0 + Days::hours(7)).await;
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].suggestion.as_deref(), Some(METRIC));
    assert!(
        cards(&tg).is_empty(),
        "shown in the chat, with the next answer"
    );

    // The card comes under Ann's next direct answer: the change verbatim.
    say(&tg, &ann, "How far is Lyon from Paris?", 3).await;
    assert!(
        tg.wait_until(WAIT, |t| !cards(t).is_empty()).await,
        "no card"
    );
    let card = cards(&tg).remove(0);
    assert!(card.text.contains(METRIC), "{}", card.text);
    let (apply, dismiss) = buttons(&card);

    // Bob's press, a forged one, then a restart.
    let q = tg.callback(Where::Dm, &bob, card.message_id, &apply);
    assert_eq!(
        answer_to(&tg, &q).await,
        "Only the person this suggestion is for can answer it."
    );
    let q = tg.callback(Where::Dm, &ann, card.message_id, "pf:0123456789ab:a");
    assert_eq!(answer_to(&tg, &q).await, "This button is no longer valid.");
    gw.stop().await;
    let gw = start(&config).await;
    let store = gw.running.store.clone();

    let q = tg.callback(Where::Dm, &ann, card.message_id, &apply);
    assert_eq!(answer_to(&tg, &q).await, "✅ Saved to your profile.");
    let owner = MemoryOwner::new(Platform::Telegram, UserId(900));
    let kept = store
        .memories()
        .of(owner, &[MemoryKind::Preference], 10, Utc::now())
        .await
        .unwrap();
    assert!(kept.iter().any(|m| m.content == METRIC), "{kept:?}");
    assert!(
        tg.wait_until(WAIT, |t| t
            .stored(900, card.message_id)
            .is_some_and(
                |m| m.reply_markup.is_none() && m.text.contains("applied")
            ))
        .await,
        "the card shows the outcome"
    );
    for press in [&apply, &dismiss] {
        let q = tg.callback(Where::Dm, &ann, card.message_id, press);
        assert_eq!(
            answer_to(&tg, &q).await,
            "This suggestion was already applied."
        );
    }

    // The same change again is not proposed; another one is, and dismissed.
    say(&tg, &ann, "Metric, as always", 4).await;
    let again = reflect(&store, &llm, t0, t0 + Days::hours(14)).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].suggestion, None, "already in the profile");
    *proposal.lock().unwrap() = FRIDAYS.to_owned();
    say(&tg, &ann, "I stay home on Fridays now", 5).await;
    let other = reflect(&store, &llm, t0, t0 + Days::hours(21)).await;
    assert_eq!(other[0].suggestion.as_deref(), Some(FRIDAYS));
    say(&tg, &ann, "Thanks, bye for now", 6).await;
    assert!(
        tg.wait_until(WAIT, |t| cards(t).len() == 2).await,
        "no second card"
    );
    let second = cards(&tg).remove(1);
    assert!(second.text.contains(FRIDAYS), "{}", second.text);
    let (_, dismiss) = buttons(&second);
    let q = tg.callback(Where::Dm, &ann, second.message_id, &dismiss);
    assert_eq!(
        answer_to(&tg, &q).await,
        "Dismissed — I won't suggest this again."
    );
    let kept = store
        .memories()
        .of(owner, &[MemoryKind::Preference], 10, Utc::now())
        .await
        .unwrap();
    assert!(!kept.iter().any(|m| m.content == FRIDAYS), "{kept:?}");
    say(&tg, &ann, "Fridays at home, as I said", 7).await;
    let later = reflect(&store, &llm, t0, t0 + Days::hours(28)).await;
    assert_eq!(later[0].suggestion, None, "dismissed: not proposed again");
    say(&tg, &ann, "See you", 8).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(cards(&tg).len(), 2, "no new card");
    gw.stop().await;
}
