//! The Discord adapter's menus, forms and deadlines against the fake Discord
//! (real HTTP, real gateway): the fake holds select menus and modals to
//! Discord's limits and refuses a second or late initial response; a press
//! delivered late is deferred at once (Discord's 3 s run from its creation);
//! a form can only be the first answer to a button press; a choice and a
//! modal submit arrive as presses carrying their values.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::discord_adapter::{card, channel, harness, Harness, ALICE, CHANNEL};
use crate::support::fake_discord::{first_select, Choice, FakeDiscordOptions, Press};
use serde_json::{json, Value};
use std::time::Duration;
use switchboard_platform::{
    ActionId, ButtonPress, FieldValue, Form, FormField, Menu, MenuOption, OutgoingMessage,
    PlatformAdapter, PlatformError, PressAnswer, PressInput,
};

/// A harness whose adapter never defers by itself within a test.
async fn patient() -> Harness {
    harness(FakeDiscordOptions::default(), |c| {
        c.timings.defer_after = Duration::from_secs(30)
    })
    .await
}

fn menu(options: usize) -> Menu {
    Menu {
        action: ActionId::parse("cm:queue:1").unwrap(),
        placeholder: "Pick one".into(),
        options: (0..options)
            .map(|i| MenuOption {
                label: format!("option {i}"),
                value: format!("v{i}"),
                description: Some(format!("the option number {i}")),
                default: i == 0,
            })
            .collect(),
    }
}

fn form(fields: &[(&str, &str)]) -> Form {
    Form {
        action: ActionId::parse("ap:1:e").unwrap(),
        title: "exec_command".into(),
        fields: fields
            .iter()
            .map(|(id, value)| FormField {
                id: (*id).into(),
                label: (*id).into(),
                value: (*value).into(),
                multiline: false,
                required: true,
            })
            .collect(),
    }
}

/// Posts `body` to `path` of the fake as the bot; returns (status, JSON).
/// A form answering `press` is refused as unsupported; the press still
/// takes its one answer, an update of the card to `text`.
async fn form_refused_then(h: &Harness, press: &ButtonPress, field: (&str, &str), text: &str) {
    let refused = h
        .adapter
        .answer_press(press, PressAnswer::Form(form(&[field])))
        .await;
    assert!(
        matches!(refused, Err(PlatformError::Unsupported(_))),
        "{refused:?}"
    );
    h.adapter
        .answer_press(press, PressAnswer::Update(OutgoingMessage::text(text)))
        .await
        .unwrap();
}

async fn post(h: &Harness, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/api/v10{path}", h.fake.api_url))
        .header(
            "authorization",
            format!("Bot {}", crate::support::fake_discord::TOKEN),
        )
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn select_row(options: Vec<Value>, extra: Option<Value>) -> Value {
    let mut components = vec![json!({
        "type": 3, "custom_id": "pick", "options": options,
    })];
    components.extend(extra);
    json!([{ "type": 1, "components": components }])
}

#[tokio::test]
async fn the_fake_holds_selects_and_modals_to_discords_limits() {
    let mut h = patient().await;
    let path = format!("/channels/{CHANNEL}/messages");
    let option = |label: String| json!({ "label": label, "value": label.clone() });
    let options = |n: usize| (0..n).map(|i| option(format!("o{i}"))).collect::<Vec<_>>();
    for (refused, components) in [
        ("26 options", select_row(options(26), None)),
        ("no option", select_row(Vec::new(), None)),
        (
            "a long label",
            select_row(vec![option("l".repeat(101))], None),
        ),
        (
            "a button beside the select",
            select_row(
                options(2),
                Some(json!({ "type": 2, "style": 1, "label": "b", "custom_id": "b" })),
            ),
        ),
    ] {
        let (status, _) = post(
            &h,
            &path,
            json!({ "content": "x", "components": components }),
        )
        .await;
        assert_eq!(status, 400, "{refused} must be refused");
    }
    let (status, _) = post(
        &h,
        &path,
        json!({ "content": "x", "components": select_row(options(25), None) }),
    )
    .await;
    assert_eq!(status, 200, "25 options fit");

    let sent = h
        .adapter
        .send(&channel(CHANNEL), card("Edit me?", &["ap:1:e"]))
        .await
        .unwrap();
    let pressed = h
        .fake
        .press(Press::new(sent.id.get() as u64, "ap:1:e", ALICE))
        .unwrap();
    h.next_press().await;
    let callback = format!("/interactions/{pressed}/interaction-token-{pressed}/callback");
    let modal = |title: String, label: &str, value: String| {
        json!({ "type": 9, "data": { "custom_id": "ap:1:e", "title": title, "components": [
            { "type": 1, "components": [{
                "type": 4, "custom_id": "command", "style": 1, "label": label, "value": value,
            }] },
        ] } })
    };
    for (refused, body) in [
        (
            "a long title",
            modal("t".repeat(46), "command", "ls".into()),
        ),
        (
            "a long label",
            modal("t".into(), &"l".repeat(46), "ls".into()),
        ),
        (
            "a long value",
            modal("t".into(), "command", "v".repeat(4001)),
        ),
    ] {
        assert_eq!(
            post(&h, &callback, body).await.0,
            400,
            "{refused} must be refused"
        );
    }
    let (status, _) = post(
        &h,
        &callback,
        modal("exec_command".into(), "command", "ls".into()),
    )
    .await;
    assert_eq!(status, 204, "the modal opens");
    let (status, body) = post(&h, &callback, json!({ "type": 6 })).await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (400, Some(40060)),
        "one initial response"
    );

    let submitted = h.fake.submit_modal(pressed, &[("command", "pwd")]).unwrap();
    let press = h.next_press().await;
    assert_eq!(
        press.input,
        PressInput::Form(vec![FieldValue {
            id: "command".into(),
            value: "pwd".into()
        }])
    );
    assert_eq!(
        press.message,
        Some(sent),
        "a submit names the card it came from"
    );
    let again = format!("/interactions/{submitted}/interaction-token-{submitted}/callback");
    let (status, _) = post(&h, &again, modal("t".into(), "command", "ls".into())).await;
    assert_eq!(status, 400, "a modal never answers a modal submit");
    h.stop().await;
}

#[tokio::test]
async fn a_press_delivered_late_is_deferred_at_once() {
    // Discord's own clock: 3 s from the interaction's creation, and the
    // adapter's default 2.5 s before it defers by itself.
    let mut h = harness(FakeDiscordOptions::default(), |c| {
        c.timings.defer_after = Duration::from_millis(2500)
    })
    .await;
    let sent = h
        .adapter
        .send(&channel(CHANNEL), card("Deploy?", &["ap:9:y"]))
        .await
        .unwrap();
    let card_id = sent.id.get() as u64;
    // Replayed after a reconnect: created 2 s before it reaches the bot.
    let late = Press::new(card_id, "ap:9:y", ALICE).delivered_late(Duration::from_secs(2));
    let interaction = h.fake.press(late).unwrap();
    let press = h.next_press().await;
    assert!(
        h.fake
            .wait_for(|f| f.callbacks().iter().any(|c| c.interaction == interaction))
            .await,
        "never deferred"
    );
    let deferral = h.fake.callbacks()[0].clone();
    assert_eq!(
        (deferral.interaction, deferral.kind),
        (interaction, 6),
        "deferred within Discord's 3 s of its creation (the fake refuses later ones)"
    );
    h.adapter
        .answer_press(
            &press,
            PressAnswer::Update(OutgoingMessage::text("✅ Deployed")),
        )
        .await
        .unwrap();
    assert_eq!(h.fake.message(card_id).unwrap()["content"], "✅ Deployed");
    h.stop().await;
}

#[tokio::test]
async fn a_form_is_only_ever_the_first_answer_to_a_button() {
    let mut h = harness(FakeDiscordOptions::default(), |_| {}).await; // defers after 150 ms
    let sent = h
        .adapter
        .send(&channel(CHANNEL), card("Edit me?", &["ap:1:e"]))
        .await
        .unwrap();
    let card_id = sent.id.get() as u64;
    h.fake.press(Press::new(card_id, "ap:1:e", ALICE)).unwrap();
    let slow = h.next_press().await;
    assert!(
        h.fake.wait_for(|f| f.callbacks().len() == 1).await,
        "never deferred"
    );
    form_refused_then(&h, &slow, ("command", "ls"), "✏️ Editing").await;
    assert_eq!(h.fake.message(card_id).unwrap()["content"], "✏️ Editing");
    h.stop().await;

    let mut h = patient().await;
    let sent = h
        .adapter
        .send(&channel(CHANNEL), card("Edit me?", &["ap:1:e"]))
        .await
        .unwrap();
    let card_id = sent.id.get() as u64;
    let pressed = h.fake.press(Press::new(card_id, "ap:1:e", ALICE)).unwrap();
    let quick = h.next_press().await;
    h.adapter
        .answer_press(&quick, PressAnswer::Form(form(&[("command", "ls")])))
        .await
        .unwrap();
    let modal = h.fake.modal(pressed).expect("the modal opened");
    assert_eq!(modal["components"][0]["components"][0]["value"], "ls");
    h.fake.submit_modal(pressed, &[("command", "pwd")]).unwrap();
    let submit = h.next_press().await;
    form_refused_then(&h, &submit, ("command", "pwd"), "✏️ Edited").await;
    assert_eq!(h.fake.callbacks().last().unwrap().kind, 7);
    assert_eq!(h.fake.message(card_id).unwrap()["content"], "✏️ Edited");
    h.stop().await;
}

#[tokio::test]
async fn a_choice_in_a_menu_arrives_with_its_value() {
    let mut h = patient().await;
    let too_many = OutgoingMessage::text("Pick").with_menu(Some(menu(26)));
    assert!(h.adapter.send(&channel(CHANNEL), too_many).await.is_err());
    let sent = h
        .adapter
        .send(
            &channel(CHANNEL),
            OutgoingMessage::text("Pick").with_menu(Some(menu(3))),
        )
        .await
        .unwrap();
    let message_id = sent.id.get() as u64;
    let select = first_select(&h.fake.message(message_id).unwrap()).unwrap();
    assert_eq!(select["custom_id"], "cm:queue:1");
    assert_eq!(select["options"][0]["default"], true);
    assert!(
        h.fake
            .choose(Choice::new(message_id, "cm:queue:1", ALICE, "v9"))
            .is_none(),
        "Discord only sends offered values"
    );
    h.fake
        .choose(Choice::new(message_id, "cm:queue:1", ALICE, "v2"))
        .unwrap();
    let press = h.next_press().await;
    assert_eq!(press.action.as_str(), "cm:queue:1");
    assert_eq!(press.input.chosen(), Some("v2"));
    h.adapter.defer_press(&press).await.unwrap();
    assert_eq!(h.fake.callbacks()[0].kind, 6, "deferred at once when asked");
    h.adapter
        .answer_press(
            &press,
            PressAnswer::Update(OutgoingMessage::text("Chose v2")),
        )
        .await
        .unwrap();
    let updated = h.fake.message(message_id).unwrap();
    assert_eq!(updated["content"], "Chose v2");
    assert_eq!(updated["components"], json!([]), "the menu is gone");
    h.stop().await;
}
