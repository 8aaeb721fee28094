//! Models at run time, end to end on fake model endpoints: `/model` switches
//! a session to an allowed catalogue model (and refuses one the operator did
//! not allow), usage is priced with the catalogue's prices of the time (a
//! later price change does not rewrite it), a user budget stops turns with a
//! notice while commands answer, and each routing rule (cheap, search,
//! vision) takes effect, falling back to the session's model when the routed
//! one fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::io::Cursor;

use image::{ImageFormat, Rgb, RgbImage};
use support::e2e::Harness;
use support::fake_llm::{FakeLlm, Reply};
use support::test_channel::Download;
use switchboard::store::{ModelRow, Prices};
use switchboard_platform::{AttachmentKind, Platform, UserId};

fn row(name: &str, llm: &FakeLlm, input: f64, output: f64, vision: bool) -> ModelRow {
    ModelRow {
        name: name.into(),
        api: "openai".into(),
        base_url: llm.base_url(),
        key_env: None,
        url_env: None,
        context_window: Some(32_000),
        prices: Prices {
            input,
            output,
            cache_read: 0.0,
            cache_write: 0.0,
        },
        vision,
        tools: true,
        reasoning: false,
        role: None,
        rank: 0,
        seeded: false,
    }
}

#[tokio::test]
async fn model_switching_pricing_across_a_price_change_and_a_user_budget() {
    let other = FakeLlm::start().await;
    let h = Harness::with(&[
        ("MODELS_USER_SELECTABLE", "other-model"),
        ("BUDGET_USER_DAILY_USD", "1.00"),
    ])
    .await;
    let store = &h.running.store;
    store
        .put_model(&row("other-model", &other, 100.0, 200.0, false))
        .await
        .unwrap();
    store
        .put_model(&row("secret-model", &other, 0.0, 0.0, false))
        .await
        .unwrap();

    h.channel.dm(1, "/model").await;
    let listing = h
        .wait_for("the model list", |l| l.any_contains("Models you can use"))
        .await
        .find("Models you can use")
        .unwrap()
        .text
        .clone();
    assert!(
        listing.contains("`fake-model`") && listing.contains("`other-model`"),
        "{listing}"
    );
    assert!(!listing.contains("secret-model"), "{listing}");
    h.channel.dm(1, "/model secret-model").await;
    h.wait_for("the refusal", |l| {
        l.any_contains("`secret-model` is not a model you may use")
    })
    .await;
    h.channel.dm(1, "/model other-model").await;
    h.wait_for("the switch", |l| {
        l.any_contains("This chat now uses `other-model`")
    })
    .await;

    // 5,000 in × $100/M + 1,000 out × $200/M = $0.70.
    other.push(Reply::text("From the other model.").with_usage(5_000, 1_000, 0));
    h.channel.dm(1, "hello").await;
    h.wait_for("the answer", |l| l.has_text("From the other model."))
        .await;
    assert!(
        h.llm.requests().await.is_empty(),
        "the default model was asked"
    );
    h.idle().await;
    // The price rises tenfold; the first turn keeps its price.
    store
        .put_model(&row("other-model", &other, 1_000.0, 2_000.0, false))
        .await
        .unwrap();
    other.push(Reply::text("Second answer.").with_usage(5_000, 1_000, 0));
    h.channel.dm(1, "again").await;
    h.wait_for("the answer", |l| l.has_text("Second answer."))
        .await;
    h.idle().await;
    let usage = store
        .usage()
        .by_model(Some((Platform::Console, UserId(1))), 1)
        .await
        .unwrap();
    let other_usage = usage.iter().find(|u| u.model == "other-model").unwrap();
    assert_eq!(other_usage.cost_micros, 700_000 + 7_000_000);
    assert_eq!(other_usage.turns, 2);
    assert_eq!(other_usage.usage.input_tokens, 10_000);

    // $7.70 is past the $1.00 budget: the next turn does not run; commands do.
    h.channel.dm(1, "one more").await;
    h.wait_for("the budget notice", |l| {
        l.any_contains("You have used your daily budget ($7.70 of $1.00)")
    })
    .await;
    assert_eq!(
        other.requests().await.len(),
        2,
        "a turn ran past the budget"
    );
    h.channel.dm(1, "/usage").await;
    let report = h
        .wait_for("the usage report", |l| {
            l.any_contains("`other-model`: 2 turns")
        })
        .await
        .find("`other-model`: 2 turns")
        .unwrap()
        .text
        .clone();
    assert!(report.contains("$7.70"), "{report}");
    h.channel.dm(1, "/model default").await;
    h.wait_for("back to default", |l| {
        l.any_contains("back on the default model: `fake-model`")
    })
    .await;
    h.stop().await;
}

fn png() -> Vec<u8> {
    let mut out = Vec::new();
    RgbImage::from_pixel(64, 48, Rgb([20, 200, 30]))
        .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .unwrap();
    out
}

#[tokio::test]
async fn routing_rules_pick_cheap_search_and_vision_models_and_fall_back() {
    let (mini, web, eyes) = (
        FakeLlm::start().await,
        FakeLlm::start().await,
        FakeLlm::start().await,
    );
    let h = Harness::with(&[
        ("MODEL_ROUTE_CHEAP", "mini"),
        ("MODEL_ROUTE_SEARCH", "web"),
        ("MODEL_ROUTE_VISION", "eyes"),
        ("LLM_VISION", "off"),
        ("CHAT_VERBOSITY", "tools"),
    ])
    .await;
    let store = &h.running.store;
    for (name, llm, vision) in [
        ("mini", &mini, false),
        ("web", &web, false),
        ("eyes", &eyes, true),
    ] {
        store
            .put_model(&row(name, llm, 0.1, 0.2, vision))
            .await
            .unwrap();
    }

    mini.push(Reply::text("You're welcome."));
    h.channel.dm(1, "thanks!").await;
    let log = h
        .wait_for("the cheap answer", |l| l.any_contains("You're welcome."))
        .await;
    let answer = log.find("You're welcome.").unwrap().text.clone();
    assert!(answer.contains("model mini (a short message)"), "{answer}");

    web.push(Reply::text("Here is today's news."));
    h.channel
        .dm(
            1,
            "what is the latest news about the rust compiler release?",
        )
        .await;
    h.wait_for("the search answer", |l| {
        l.any_contains("Here is today's news.")
    })
    .await;

    h.llm
        .push(Reply::text("A long answer from the main model."));
    h.channel
        .dm(
            1,
            "please explain how the borrow checker decides lifetimes in closures",
        )
        .await;
    h.wait_for("the main answer", |l| {
        l.any_contains("A long answer from the main model.")
    })
    .await;

    // The main model is blind (LLM_VISION=off): a photo goes to `eyes`,
    // which is sent the image.
    eyes.push(Reply::text("A green rectangle."));
    let photo = h.channel.file(
        AttachmentKind::Image,
        Some("shot.png"),
        Download::Bytes(png()),
    );
    h.channel
        .dm_with(1, "what is in this picture, in detail please?", vec![photo])
        .await;
    h.wait_for("the vision answer", |l| {
        l.any_contains("A green rectangle.")
    })
    .await;
    let seen = eyes.requests().await;
    assert_eq!(
        support::images::in_request(&seen[0]).len(),
        1,
        "no image sent to the vision model"
    );
    // The main model was never sent an image.
    for r in h.llm.requests().await {
        assert!(!support::images::any_in(&r));
    }

    // A routed model that fails falls back to the session's model.
    for _ in 0..3 {
        mini.push(Reply::status(
            503,
            serde_json::json!({"error": {"message": "overloaded"}}),
        ));
    }
    h.llm.push(Reply::text("The main model stood in."));
    h.channel.dm(1, "ok, cool").await;
    h.wait_for("the fallback answer, saying so", |l| {
        l.texts().iter().any(|t| {
            t.contains("The main model stood in.") && t.contains("fallback model `fake-model`")
        })
    })
    .await;
    assert_eq!(
        mini.requests().await.len(),
        2,
        "the cheap model was not tried first"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_turn_a_rule_routed_resumes_on_the_same_model_after_its_card() {
    let mini = FakeLlm::start().await;
    let h = Harness::with(&[("MODEL_ROUTE_CHEAP", "mini")]).await;
    h.running
        .store
        .put_model(&row("mini", &mini, 0.1, 0.2, false))
        .await
        .unwrap();
    mini.push(Reply::tool_calls([(
        "c_ls",
        "exec_command",
        serde_json::json!({"command": "echo routed"}),
    )]));
    mini.push(Reply::text("Ran it."));
    h.channel.dm(1, "run echo").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the resumed answer", |l| l.any_contains("Ran it."))
        .await;
    assert_eq!(mini.requests().await.len(), 2, "both calls on mini");
    assert!(
        h.llm.requests().await.is_empty(),
        "the session's model was not asked"
    );
    h.stop().await;
}
