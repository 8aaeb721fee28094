//! Reactions as status on Discord, end to end (the real gateway and adapter
//! against the fake Discord): the user's message shows 👀 received, ✍️
//! working, ✅ done or ❌ failed, each put with `PUT …/reactions/{emoji}/@me`
//! and the previous one taken off with `DELETE …/@me`; `REACTIONS=off` sends
//! none; a 👍 (MESSAGE_REACTION_ADD) on an answer by its asker is feedback,
//! by anyone else it is ignored, and the bot's own reactions coming back as
//! events are ignored too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::discord_e2e::{E2e, ALICE, CHANNEL};
use crate::support;

use std::time::Duration;
use support::fake_discord::{message_id, UserMessage};
use support::fake_llm::Reply;
use switchboard::store::{MemoryOwner, Store};
use switchboard_platform::{Platform, UserId};

const CAROL: u64 = 1_300_000_000_000_000_019;

fn calls(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(m, e)| ((*m).to_owned(), (*e).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_turn_shows_its_states_each_replacing_the_last() {
    let e = E2e::start().await;
    e.llm
        .push(Reply::text("Done on Discord.").with_chunk_delay(Duration::from_millis(150)));
    let question = e.say(UserMessage::new(CHANNEL, ALICE, "do it").mentioning_bot());
    e.wait_text(CHANNEL, "Done on Discord.").await;
    e.wait("the ✅ reaction alone", |d| {
        d.bot_reactions(question) == ["✅"]
    })
    .await;
    // A state that gives way to other calls (reactions go last) and is
    // overtaken by the next one is skipped; the rest come in order, each
    // taking the previous one off.
    let seen = e.discord.reaction_calls(question);
    let mut expected = vec![("PUT", "👀"), ("PUT", "✍️"), ("DELETE", "👀")];
    if seen.first().map(|(_, e)| e.as_str()) != Some("👀") {
        expected = vec![("PUT", "✍️")];
    }
    expected.extend([("PUT", "✅"), ("DELETE", "✍️")]);
    assert_eq!(seen, calls(&expected));
    e.stop().await;
}

#[tokio::test]
async fn a_failed_turn_ends_with_the_failed_reaction() {
    let e = E2e::start().await;
    let body = support::fake_llm::error_body("bad request", "invalid_request_error", None);
    e.llm.push(Reply::status(400, body));
    let question = e.say(UserMessage::new(CHANNEL, ALICE, "fail please").mentioning_bot());
    e.wait("the ❌ reaction alone", |d| {
        d.bot_reactions(question) == ["❌"]
    })
    .await;
    let seen = e.discord.reaction_calls(question);
    assert!(!seen.iter().any(|(_, emoji)| emoji == "✅"), "{seen:?}");
    assert_eq!(
        seen.iter().filter(|(m, _)| m == "PUT").count(),
        seen.len() / 2 + 1,
        "each replaced one taken off: {seen:?}"
    );
    e.stop().await;
}

#[tokio::test]
async fn reactions_off_sends_none() {
    let e = E2e::with(&[("REACTIONS", "off")]).await;
    e.llm.push(Reply::text("Quiet."));
    let question = e.say(UserMessage::new(CHANNEL, ALICE, "hello").mentioning_bot());
    e.wait_text(CHANNEL, "Quiet.").await;
    e.quiet().await;
    assert!(e.discord.reaction_calls(question).is_empty());
    e.stop().await;
}

#[tokio::test]
async fn a_thumbs_up_on_an_answer_is_feedback_and_another_users_is_ignored() {
    let e = E2e::start().await;
    e.llm.push(Reply::text("Alice's answer."));
    let question = e.say(UserMessage::new(CHANNEL, ALICE, "tell me").mentioning_bot());
    let answer = message_id(&e.wait_text(CHANNEL, "Alice's answer.").await);
    e.wait("the ✅ reaction", |d| d.bot_reactions(question) == ["✅"])
        .await;
    let db = e._dir.path().join("data").join("switchboard.db");
    let store = Store::open(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    let alice = MemoryOwner::new(Platform::Discord, UserId(ALICE as i64));
    let carol = MemoryOwner::new(Platform::Discord, UserId(CAROL as i64));

    assert!(
        e.discord.react(answer, CAROL, "👎"),
        "Carol's 👎 dispatched"
    );
    assert!(e.discord.react(answer, ALICE, "🎉"));
    assert!(e.discord.react(answer, ALICE, "👍"));
    let mut rated = Vec::new();
    for _ in 0..100 {
        rated = store.memories().rated_feedback(alice, 10).await.unwrap();
        if !rated.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rated.len(), 1, "Alice's 👍 recorded");
    assert_eq!(rated[0].rating, Some(1));
    assert_eq!(rated[0].answer, "Alice's answer.");
    let carols = store.memories().rated_feedback(carol, 10).await.unwrap();
    assert!(carols.is_empty(), "{carols:?}");
    e.stop().await;
}
