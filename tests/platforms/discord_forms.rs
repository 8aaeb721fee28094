//! End to end on Discord (the real gateway and adapter against the strict
//! fake Discord and the fake LLM): an approval card's ✏️ Edit opens a modal
//! prefilled with the call's arguments; a valid submit shows a new card and
//! the approved call runs with the edited arguments; an invalid one is
//! answered privately and the card stays; a submit by someone else is
//! refused. `/model` and `/queue` answer with a select menu whose choice
//! applies like the typed command, acknowledged at once and followed up.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::discord_e2e::{ephemeral, tool_result, E2e, ALICE, BOB, CHANNEL};
use crate::support::fake_discord::{
    custom_ids, first_select, message_id, Choice, FakeDiscord, Press, UserMessage,
};
use crate::support::fake_llm::{last_user_text, FakeLlm, Reply};
use serde_json::{json, Value};
use switchboard::store::{ModelRow, Prices, Store};

fn exec(call_id: &str, args: Value) -> Reply {
    Reply::tool_calls([(call_id, "exec_command", args)])
}

/// The button of `card` whose action ends with `code` (`:e` is Edit).
fn button(card: &Value, code: &str) -> String {
    custom_ids(card)
        .into_iter()
        .find(|id| id.ends_with(code))
        .unwrap_or_else(|| panic!("no {code} button on {card}"))
}

/// Asks for `args` to run and waits for the card.
async fn card_for(e: &E2e, args: Value) -> Value {
    e.llm.push(exec("call_1", args));
    e.say(UserMessage::new(CHANNEL, ALICE, "run it").mentioning_bot());
    e.wait_card(CHANNEL).await
}

/// Presses Edit on `card` as `user`; returns the interaction.
async fn press_edit(e: &E2e, card: &Value, user: u64) -> u64 {
    let edit = button(card, ":e");
    e.discord
        .press(Press::new(message_id(card), edit, user))
        .expect("the Edit button is on the card")
}

/// The callback the fake accepted for `interaction`.
async fn callback_of(e: &E2e, interaction: u64) -> (u64, Value) {
    e.wait("the interaction's answer", |d| {
        d.callbacks().iter().any(|c| c.interaction == interaction)
    })
    .await;
    let c = e
        .discord
        .callbacks()
        .into_iter()
        .find(|c| c.interaction == interaction)
        .unwrap();
    (c.kind, c.data)
}

#[tokio::test]
async fn edit_opens_a_prefilled_modal_and_the_edited_call_runs() {
    let e = E2e::start().await;
    let card = card_for(&e, json!({ "command": "echo before" })).await;
    let pressed = press_edit(&e, &card, ALICE).await;
    let (kind, modal) = callback_of(&e, pressed).await;
    assert_eq!(kind, 9, "Edit answers with a modal");
    assert_eq!(modal["title"], "exec_command");
    assert_eq!(modal["custom_id"], button(&card, ":e"));
    let input = &modal["components"][0]["components"][0];
    assert_eq!(
        (input["custom_id"].as_str(), input["value"].as_str()),
        (Some("command"), Some("echo before"))
    );
    assert_eq!(
        custom_ids(&e.discord.message(message_id(&card)).unwrap()).len(),
        4,
        "opening the form decides nothing"
    );

    e.llm.push(Reply::text("It printed after."));
    let submitted = e
        .discord
        .submit_modal(pressed, &[("command", "echo after")])
        .unwrap();
    let (kind, update) = callback_of(&e, submitted).await;
    assert_eq!(kind, 7, "the old card is updated in the response");
    assert!(
        update["content"].as_str().unwrap().contains("Edited"),
        "{update}"
    );
    assert_eq!(update["components"], json!([]));
    e.wait("a new card", |d| {
        d.card(CHANNEL)
            .is_some_and(|c| message_id(&c) != message_id(&card))
    })
    .await;
    let new_card = e.discord.card(CHANNEL).unwrap();
    assert!(
        new_card["content"].as_str().unwrap().contains("echo after"),
        "{new_card}"
    );
    e.discord
        .press(Press::new(
            message_id(&new_card),
            button(&new_card, ":y"),
            ALICE,
        ))
        .unwrap();
    e.wait_text(CHANNEL, "It printed after.").await;
    let requests = e.llm.wait_for_requests(2).await;
    let result = tool_result(&requests[1], "call_1");
    assert!(
        result.contains("after") && !result.contains("before"),
        "{result}"
    );
    e.stop().await;
}

#[tokio::test]
async fn an_invalid_submit_is_answered_privately_and_the_card_stays() {
    let e = E2e::start().await;
    let card = card_for(&e, json!({ "command": "ls", "timeout_secs": 5 })).await;
    let card_id = message_id(&card);
    let before = e.discord.message(card_id).unwrap();
    // Not every argument is text: one field holds them as JSON.
    let pressed = press_edit(&e, &card, ALICE).await;
    let (_, modal) = callback_of(&e, pressed).await;
    let input = &modal["components"][0]["components"][0];
    assert_eq!(input["custom_id"], "arguments");
    assert_eq!(input["style"], 2);
    let prefilled: Value = serde_json::from_str(input["value"].as_str().unwrap()).unwrap();
    assert_eq!(prefilled, json!({ "command": "ls", "timeout_secs": 5 }));

    for (sent, why) in [
        (
            r#"{"command": "ls", "timeout_secs": "soon"}"#,
            "`timeout_secs` must be an integer",
        ),
        (
            r#"{"command": "ls", "rm": true}"#,
            "`rm` is not an argument of this tool",
        ),
        (r#"{"command": "   "}"#, "command is empty"),
        ("{not json", "is not JSON"),
    ] {
        let submitted = e
            .discord
            .submit_modal(pressed, &[("arguments", sent)])
            .unwrap();
        let (kind, data) = callback_of(&e, submitted).await;
        assert_eq!(kind, 4, "{sent}");
        assert!(ephemeral(&data), "only the editor sees why");
        let text = data["content"].as_str().unwrap();
        assert!(
            text.contains(why) && text.contains("The card is still open"),
            "{sent}: {text}"
        );
    }
    let after = e.discord.message(card_id).unwrap();
    assert_eq!(after["content"], before["content"], "the card stays");
    assert_eq!(custom_ids(&after).len(), 4);
    e.stop().await;
}

#[tokio::test]
async fn a_submit_by_another_user_is_refused() {
    let e = E2e::start().await;
    let card = card_for(&e, json!({ "command": "echo mine" })).await;
    let card_id = message_id(&card);
    // Bob is neither the requester nor an approver: no form for him.
    let bobs = press_edit(&e, &card, BOB).await;
    let (kind, data) = callback_of(&e, bobs).await;
    assert_eq!(kind, 4);
    assert!(ephemeral(&data));
    assert!(data["content"]
        .as_str()
        .unwrap()
        .contains("Only the person who asked"));
    assert!(e.discord.modal(bobs).is_none());

    // Alice's form, sent back as Bob (a forged or replayed submit).
    let alices = press_edit(&e, &card, ALICE).await;
    assert_eq!(callback_of(&e, alices).await.0, 9);
    let forged = e
        .discord
        .submit_modal_as(alices, BOB, &[("command", "rm -rf ~")])
        .unwrap();
    let (kind, data) = callback_of(&e, forged).await;
    assert_eq!(kind, 4);
    assert!(ephemeral(&data));
    assert!(data["content"]
        .as_str()
        .unwrap()
        .contains("Only the person who asked"));
    let after = e.discord.message(card_id).unwrap();
    assert_eq!(custom_ids(&after).len(), 4, "the card is untouched");
    assert!(!after["content"].as_str().unwrap().contains("rm -rf"));
    e.stop().await;
}

#[tokio::test]
async fn arguments_too_long_for_a_form_are_edited_by_message_as_before() {
    let e = E2e::start().await;
    let long = format!("echo {}", "x".repeat(4_100));
    let card = card_for(&e, json!({ "command": long })).await;
    let pressed = press_edit(&e, &card, ALICE).await;
    let (kind, data) = callback_of(&e, pressed).await;
    assert_eq!(
        kind, 7,
        "no modal holds 4,100 characters: the card asks for a message"
    );
    let text = data["content"].as_str().unwrap();
    assert!(
        text.contains("send the new arguments as your next message"),
        "{text}"
    );
    assert!(e.discord.modal(pressed).is_none());

    e.llm.push(Reply::text("Ran the short one."));
    e.say(UserMessage::new(CHANNEL, ALICE, "echo short").mentioning_bot());
    e.wait("a new card", |d| {
        d.card(CHANNEL)
            .is_some_and(|c| message_id(&c) != message_id(&card))
    })
    .await;
    let new_card = e.discord.card(CHANNEL).unwrap();
    assert!(new_card["content"].as_str().unwrap().contains("echo short"));
    e.discord
        .press(Press::new(
            message_id(&new_card),
            button(&new_card, ":y"),
            ALICE,
        ))
        .unwrap();
    e.wait_text(CHANNEL, "Ran the short one.").await;
    e.stop().await;
}

fn row(name: &str, llm: &FakeLlm) -> ModelRow {
    ModelRow {
        name: name.into(),
        api: "openai".into(),
        base_url: llm.base_url(),
        key_env: None,
        url_env: None,
        context_window: Some(32_000),
        prices: Prices {
            input: 0.0,
            output: 0.0,
            cache_read: 0.0,
            cache_write: 0.0,
        },
        vision: false,
        tools: true,
        reasoning: false,
        role: None,
        rank: 0,
        seeded: false,
    }
}

/// The newest bot message in `channel` with a select menu.
fn menu_message(d: &FakeDiscord, channel: u64) -> Option<Value> {
    d.bot_messages(channel)
        .into_iter()
        .rev()
        .find(|m| first_select(m).is_some())
}

#[tokio::test]
async fn the_model_menu_switches_the_model_acknowledged_at_once() {
    let other = FakeLlm::start().await;
    let e = E2e::with(&[("MODELS_USER_SELECTABLE", "other-model")]).await;
    let url = format!(
        "sqlite://{}",
        e._dir.path().join("data").join("switchboard.db").display()
    );
    let store = Store::open(&url).await.unwrap();
    store.put_model(&row("other-model", &other)).await.unwrap();

    e.wait("the slash commands registered", |d| {
        d.slash_commands().iter().any(|c| c["name"] == "model")
    })
    .await;
    e.discord.slash(CHANNEL, ALICE, "model", None).unwrap();
    e.wait("the model menu", |d| menu_message(d, CHANNEL).is_some())
        .await;
    let reply = menu_message(&e.discord, CHANNEL).unwrap();
    assert!(reply["content"]
        .as_str()
        .unwrap()
        .contains("Model: `fake-model`"));
    let select = first_select(&reply).unwrap();
    let options: Vec<(&str, bool)> = select["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["value"].as_str().unwrap(),
                o["default"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(options, [("fake-model", true), ("other-model", false)]);

    let custom_id = select["custom_id"].as_str().unwrap();
    let chosen = e
        .discord
        .choose(Choice::new(
            message_id(&reply),
            custom_id,
            ALICE,
            "other-model",
        ))
        .unwrap();
    // Switching reads and writes storage: acknowledged at once (within
    // Discord's 3 s — the fake refuses a late one), then followed up.
    let (kind, _) = callback_of(&e, chosen).await;
    assert_eq!(kind, 6, "deferred");
    e.wait("the outcome in place of the menu", |d| {
        d.message(message_id(&reply)).is_some_and(|m| {
            m["content"] == "This chat now uses `other-model`." && first_select(&m).is_none()
        })
    })
    .await;
    assert!(e
        .discord
        .followups()
        .iter()
        .any(|f| f.interaction == chosen && f.edit_original));

    other.push(Reply::text("Answered by the other model."));
    e.say(UserMessage::new(CHANNEL, ALICE, "who answers?").mentioning_bot());
    e.wait_text(CHANNEL, "Answered by the other model.").await;
    assert!(
        e.llm.requests().await.is_empty(),
        "the default model was not asked"
    );
    assert!(last_user_text(&other.requests().await[0])
        .unwrap()
        .contains("who answers?"));
    e.stop().await;
}

#[tokio::test]
async fn the_queue_menu_changes_the_mode_like_the_typed_command() {
    let e = E2e::start().await;
    e.say(UserMessage::new(CHANNEL, ALICE, "/queue").mentioning_bot());
    e.wait("the queue menu", |d| menu_message(d, CHANNEL).is_some())
        .await;
    let reply = menu_message(&e.discord, CHANNEL).unwrap();
    assert!(reply["content"]
        .as_str()
        .unwrap()
        .contains("Queue mode here: **followup**"));
    let select = first_select(&reply).unwrap();
    let marked: Vec<(&str, bool)> = select["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["value"].as_str().unwrap(),
                o["default"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        marked,
        [("followup", true), ("collect", false), ("interrupt", false)]
    );
    let custom_id = select["custom_id"].as_str().unwrap().to_owned();

    // Bob chooses in Alice's menu: it applies to his own session, told privately.
    let bobs = e
        .discord
        .choose(Choice::new(
            message_id(&reply),
            custom_id.clone(),
            BOB,
            "collect",
        ))
        .unwrap();
    e.wait("Bob's private outcome", |d| {
        d.followups()
            .iter()
            .any(|f| f.interaction == bobs && f.ephemeral())
    })
    .await;
    assert!(first_select(&e.discord.message(message_id(&reply)).unwrap()).is_some());

    let alices = e
        .discord
        .choose(Choice::new(
            message_id(&reply),
            custom_id,
            ALICE,
            "interrupt",
        ))
        .unwrap();
    assert_eq!(callback_of(&e, alices).await.0, 6);
    e.wait("Alice's outcome in place of the menu", |d| {
        d.message(message_id(&reply)).is_some_and(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Queue mode: **interrupt**"))
                && first_select(&m).is_none()
        })
    })
    .await;
    // The typed form still works, and sees the chosen mode.
    e.say(UserMessage::new(CHANNEL, ALICE, "/queue").mentioning_bot());
    e.wait("the typed answer", |d| {
        d.bot_messages(CHANNEL).iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Queue mode here: **interrupt**"))
        })
    })
    .await;
    e.say(UserMessage::new(CHANNEL, BOB, "/queue").mentioning_bot());
    e.wait("Bob's mode", |d| {
        d.bot_messages(CHANNEL).iter().any(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("Queue mode here: **collect**"))
        })
    })
    .await;
    e.stop().await;
}
