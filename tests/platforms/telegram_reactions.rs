//! Reactions as status on Telegram, end to end (the real gateway and adapter
//! against the fake Bot API): the user's message shows 👀 received (when it
//! waits for its turn), ✍ working, 👌 done or 💔 failed through `setMessageReaction`; `REACTIONS=off`
//! sends none; an emoji outside Telegram's list is refused by the (strict)
//! fake and by the settings; a 👍 on an answer by its asker is feedback, by
//! anyone else it is ignored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;
use crate::telegram_e2e::{ann, E2e};

use std::collections::HashMap;
use std::time::Duration;
use support::fake_llm::Reply;
use support::fake_telegram::{FakeUser, Where};
use switchboard::store::{MemoryOwner, Store};
use switchboard_platform::{Platform, StatusEmoji, UserId};
use switchboard_telegram::TelegramConfig;

const GROUP: i64 = -100_777;

fn bob() -> FakeUser {
    FakeUser::new(901, "Bob")
}

/// Waits until the user's message `message` in `chat` shows `last`, and
/// returns every reaction the bot set on it, in order.
async fn reactions_until(e: &E2e, chat: i64, message: i64, last: &str) -> Vec<String> {
    let shown =
        e.tg.wait_until(Duration::from_secs(20), |t| {
            t.bot_reactions(chat, message).last().map(String::as_str) == Some(last)
        })
        .await;
    if !shown {
        let calls: Vec<String> =
            e.tg.calls()
                .iter()
                .filter(|c| !c.method.eq_ignore_ascii_case("getupdates"))
                .map(|c| format!("{} {} {:?}", c.method, c.params, c.description))
                .collect();
        panic!("no {last} on {message}; calls:\n{}", calls.join("\n"));
    }
    e.wait(&format!("the {last} reaction"), |t| {
        t.bot_reactions(chat, message).last().map(String::as_str) == Some(last)
    })
    .await;
    e.tg.bot_reactions(chat, message)
}

async fn store_of(e: &E2e) -> Store {
    let db = e._dir.path().join("switchboard.db");
    Store::open(&format!("sqlite://{}", db.display()))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_turn_shows_received_working_then_done_on_the_users_message() {
    let e = E2e::start(|_| {}).await;
    e.llm
        .push(Reply::text("All done here.").with_chunk_delay(Duration::from_millis(150)));
    let asked = e.tg.message(Where::Dm, &ann(), "please do it");
    e.answered(900, 1).await;
    let seen = reactions_until(&e, 900, asked.message_id, "👌").await;
    // A state overtaken by the next while it gave way to other calls is
    // skipped; the others come in order, ending with done.
    let order = ["👀", "✍", "👌"];
    let mut at = 0;
    for s in &seen {
        let found = order[at..].iter().position(|o| o == s).expect("in order");
        at += found + 1;
    }
    assert!(seen.contains(&"✍".to_owned()), "working shown: {seen:?}");
    // Only the status reactions: none on the answer, none refused.
    let calls = e.tg.calls_to("setMessageReaction");
    assert!(calls.iter().all(|c| c.ok), "{calls:?}");
    assert_eq!(calls.len(), seen.len());
    e.stop().await;
}

#[tokio::test]
async fn a_failed_turn_ends_with_the_failed_reaction() {
    let e = E2e::start(|_| {}).await;
    let body = support::fake_llm::error_body("bad request", "invalid_request_error", None);
    e.llm.push(Reply::status(400, body));
    let asked = e.tg.message(Where::Dm, &ann(), "this will fail");
    let seen = reactions_until(&e, 900, asked.message_id, "💔").await;
    assert!(!seen.contains(&"👌".to_owned()), "{seen:?}");
    e.stop().await;
}

#[tokio::test]
async fn a_message_waiting_for_its_turn_shows_received_first() {
    let e = E2e::start(|_| {}).await;
    e.llm.push(
        Reply::text("The first, slowly answered.").with_chunk_delay(Duration::from_millis(400)),
    );
    e.llm.push(Reply::text("The second."));
    let first = e.tg.message(Where::Dm, &ann(), "first question");
    e.wait("the first turn working", |t| {
        t.bot_reactions(900, first.message_id)
            .last()
            .map(String::as_str)
            == Some("✍")
    })
    .await;
    // The first turn runs: the second waits for it (follow-up queue).
    let second = e.tg.message(Where::Dm, &ann(), "second question");
    let seen = reactions_until(&e, 900, second.message_id, "👌").await;
    assert_eq!(seen.first().map(String::as_str), Some("👀"), "{seen:?}");
    let first_seen = reactions_until(&e, 900, first.message_id, "👌").await;
    // A turn that started at once never showed "received".
    assert!(!first_seen.contains(&"👀".to_owned()), "{first_seen:?}");
    e.stop().await;
}

#[tokio::test]
async fn reactions_off_sends_none() {
    let e = E2e::start(|c| {
        c.platforms.telegram.as_mut().unwrap().reactions = None;
    })
    .await;
    e.llm.push(Reply::text("No reactions."));
    e.tg.message(Where::Dm, &ann(), "hello");
    e.answered(900, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(e.tg.calls_to("setMessageReaction").is_empty());
    e.stop().await;
}

#[tokio::test]
async fn telegram_refuses_an_emoji_off_its_list_and_the_answer_still_comes() {
    // Past the settings' check (which refuses it, below): the fake answers
    // as Telegram does.
    let e = E2e::start(|c| {
        c.platforms.telegram.as_mut().unwrap().reactions =
            Some(StatusEmoji::new("👀", "✍", "✅", "💔"));
    })
    .await;
    e.llm.push(Reply::text("Answered anyway."));
    let asked = e.tg.message(Where::Dm, &ann(), "hello");
    let messages = e.answered(900, 1).await;
    assert_eq!(messages[0].text, "Answered anyway.");
    e.wait("the refused ✅", |t| {
        t.calls_to("setMessageReaction").iter().any(|c| !c.ok)
    })
    .await;
    let refused: Vec<_> =
        e.tg.calls_to("setMessageReaction")
            .into_iter()
            .filter(|c| !c.ok)
            .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].error_code, Some(400));
    assert_eq!(
        refused[0].description.as_deref(),
        Some("Bad Request: REACTION_INVALID")
    );
    assert_eq!(refused[0].params["reaction"][0]["emoji"], "✅");
    // What was shown before the refused ✅ stays: at most working.
    let shown = e.tg.bot_reactions(900, asked.message_id);
    assert!(shown.iter().all(|r| r == "👀" || r == "✍"), "{shown:?}");
    e.stop().await;

    // The settings refuse it at start, naming the variable.
    let vars: HashMap<&str, &str> =
        HashMap::from([("TELEGRAM_BOT_TOKEN", "1:abc"), ("REACTION_DONE", "✅")]);
    let err = TelegramConfig::from_env(|k| vars.get(k).map(|v| (*v).to_owned()), "/tmp".as_ref())
        .unwrap_err();
    assert_eq!(err.var, "REACTION_DONE");
    assert!(err.to_string().contains("does not accept ✅"), "{err}");
}

#[tokio::test]
async fn a_thumbs_up_on_an_answer_is_feedback_and_another_users_is_ignored() {
    let e = E2e::start(|_| {}).await;
    e.llm.push(Reply::text("Ann's answer."));
    e.tg.message(
        Where::Group(GROUP),
        &ann(),
        "@switchboard_test_bot what is it?",
    );
    let answer = e.answered(GROUP, 1).await.remove(0);
    assert!(answer.reply_markup.is_some(), "the answer carries 👍/👎");
    let store = store_of(&e).await;
    let ann_owner = MemoryOwner::new(Platform::Telegram, UserId(900));
    let bob_owner = MemoryOwner::new(Platform::Telegram, UserId(901));

    // Bob's 👎 on Ann's answer rates nothing.
    e.tg.react(Where::Group(GROUP), &bob(), answer.message_id, "👎");
    // Ann's ❤ is no rating either.
    e.tg.react(Where::Group(GROUP), &ann(), answer.message_id, "❤");
    e.tg.react(Where::Group(GROUP), &ann(), answer.message_id, "👍");
    let mut rated = Vec::new();
    for _ in 0..100 {
        rated = store
            .memories()
            .rated_feedback(ann_owner, 10)
            .await
            .unwrap();
        if !rated.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rated.len(), 1, "Ann's 👍 recorded");
    assert_eq!(rated[0].rating, Some(1));
    assert_eq!(rated[0].answer, "Ann's answer.");
    let bobs = store
        .memories()
        .rated_feedback(bob_owner, 10)
        .await
        .unwrap();
    assert!(bobs.is_empty(), "{bobs:?}");
    e.stop().await;
}
