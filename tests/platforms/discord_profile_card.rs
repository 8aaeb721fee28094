//! End to end on Discord: a profile-update suggestion (kept by the
//! reflector, here written straight into the database as another process
//! would) comes as a card under the user's next direct answer, the change
//! verbatim with Apply / Dismiss; another user's press is refused privately,
//! the user's Apply writes the memory and the card shows the outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::discord_e2e::{ephemeral, E2e, ALICE, BOB, DM_CHANNEL};
use crate::support::fake_discord::{custom_ids, message_id, Press, UserMessage};
use crate::support::fake_llm::Reply;
use chrono::Utc;
use switchboard::store::{MemoryKind, MemoryOwner, Store};
use switchboard_platform::{Platform, UserId};

const CHANGE: &str = "Likes a map with every route.";

#[tokio::test]
async fn a_profile_suggestion_card_is_decided_by_its_user_only() {
    let e = E2e::start().await;
    e.llm.set_responder(|_| Reply::text("Noted!"));
    e.say(UserMessage::new(
        DM_CHANNEL,
        ALICE,
        "Hello there, I like maps",
    ));
    e.wait_text(DM_CHANNEL, "Noted!").await;
    let url = format!(
        "sqlite://{}",
        e._dir.path().join("data").join("switchboard.db").display()
    );
    let store = Store::open(&url).await.unwrap();
    let owner = MemoryOwner::new(Platform::Discord, UserId(ALICE as i64));
    assert!(store
        .suggestions()
        .propose("00aa11bb22cc", owner, CHANGE, Utc::now())
        .await
        .unwrap());

    e.say(UserMessage::new(
        DM_CHANNEL,
        ALICE,
        "Show me the way to Lyon",
    ));
    let has_card = |d: &crate::support::fake_discord::FakeDiscord| {
        d.bot_messages(DM_CHANNEL)
            .into_iter()
            .find(|m| m["content"].as_str().is_some_and(|c| c.contains(CHANGE)))
    };
    e.wait("the card", |d| has_card(d).is_some()).await;
    let card = has_card(&e.discord).unwrap();
    let card_id = message_id(&card);
    let apply = custom_ids(&card)
        .into_iter()
        .find(|id| id == "pf:00aa11bb22cc:a")
        .expect("an Apply button");

    e.discord
        .press(Press::new(card_id, apply.clone(), BOB))
        .unwrap();
    let (kind, data) = e.wait_callback(1).await;
    assert_eq!(kind, 4);
    assert!(ephemeral(&data), "the refusal is only for the presser");
    assert_eq!(
        data["content"],
        "Only the person this suggestion is for can answer it."
    );
    e.discord.press(Press::new(card_id, apply, ALICE)).unwrap();
    let (_, data) = e.wait_callback(2).await;
    assert!(ephemeral(&data));
    assert_eq!(data["content"], "✅ Saved to your profile.");
    let kept = store
        .memories()
        .of(owner, &[MemoryKind::Preference], 10, Utc::now())
        .await
        .unwrap();
    assert!(kept.iter().any(|m| m.content == CHANGE), "{kept:?}");
    e.wait("the card shows the outcome", |d| {
        d.message(card_id).is_some_and(|m| {
            custom_ids(&m).is_empty()
                && m["content"].as_str().is_some_and(|c| c.contains("applied"))
        })
    })
    .await;
    e.stop().await;
}
