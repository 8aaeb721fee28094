//! `sendMessageDraft` at the edges: the fake refuses what Telegram refuses
//! (a group, no or a zero `draft_id`, empty or over-long text, an unknown
//! parse mode) and counts drafts in a window of their own; the adapter's
//! drafts stay within it and give way to messages without a single 429.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::fake_telegram::{FakeOptions, FakeTelegram, FakeUser, PublishedLimits, Where, Window};
use support::telegram_run::{config, raw_call as call};
use switchboard_platform::{
    ChatAddress, ChatId, DraftId, OutgoingMessage, Platform, PlatformAdapter, PlatformError,
};
use switchboard_telegram::{TelegramAdapter, TelegramLimits};

fn draft(chat: i64, id: i64, text: &str) -> serde_json::Value {
    json!({"chat_id": chat, "draft_id": id, "text": text})
}

async fn refused(fake: &FakeTelegram, params: serde_json::Value) -> String {
    let (status, body) = call(fake, "SendMessageDraft", params.clone()).await;
    assert_eq!(status, 400, "{params} was accepted: {body}");
    body["description"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn the_fake_takes_drafts_only_as_telegram_does() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let ann = FakeUser::new(700, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    fake.ensure_chat(Where::Group(-7001), &ann);

    assert!(refused(&fake, draft(-7001, 1, "hi"))
        .await
        .contains("TEXTDRAFT_PEER_INVALID"));
    assert!(refused(&fake, draft(12_345, 1, "hi"))
        .await
        .contains("chat not found"));
    let no_id = json!({"chat_id": 700, "text": "hi"});
    assert!(refused(&fake, no_id).await.contains("draft_id"));
    assert!(refused(&fake, draft(700, 0, "hi"))
        .await
        .contains("DRAFT_ID_INVALID"));
    assert!(refused(&fake, draft(700, 1, "")).await.contains("empty"));
    assert!(refused(&fake, draft(700, 1, " \n "))
        .await
        .contains("empty"));
    let long = "x".repeat(4097);
    assert!(refused(&fake, draft(700, 1, &long))
        .await
        .contains("too long"));
    let mut odd = draft(700, 1, "hi");
    odd["parse_mode"] = json!("Klingon");
    assert!(refused(&fake, odd).await.contains("parse_mode"));
    let mut broken = draft(700, 1, "<b>hi");
    broken["parse_mode"] = json!("HTML");
    assert!(refused(&fake, broken)
        .await
        .contains("can't parse entities"));
    let mut topic = draft(700, 1, "hi");
    topic["message_thread_id"] = json!(99);
    assert!(refused(&fake, topic).await.contains("thread not found"));
    assert!(fake.drafts(700).is_empty(), "nothing refused was kept");

    // 4,096 characters after parsing, whatever the markup around them.
    let mut html = draft(700, 7, &format!("<b>{}</b>", "y".repeat(4096)));
    html["parse_mode"] = json!("HTML");
    let (status, body) = call(&fake, "SendMessageDraft", html).await;
    assert_eq!((status, &body["result"]), (200, &json!(true)), "{body}");
    let kept = fake.drafts(700);
    assert_eq!(kept.len(), 1);
    assert_eq!((kept[0].draft_id, kept[0].text.len()), (7, 4096));
    assert!(fake.bot_messages(700).is_empty(), "a draft is no message");

    fake.refuse_drafts(700);
    assert!(!refused(&fake, draft(700, 7, "hi")).await.is_empty());
}

#[tokio::test]
async fn the_fake_counts_drafts_in_a_window_of_their_own() {
    let fake = FakeTelegram::start_with(FakeOptions {
        enforce_limits: Some(PublishedLimits {
            per_chat: Window::new(1, Duration::from_secs(60)),
            per_group: Window::new(20, Duration::from_secs(60)),
            per_bot: Window::new(3, Duration::from_secs(60)),
        }),
        ..FakeOptions::default()
    })
    .await
    .unwrap();
    for id in [700, 701] {
        fake.ensure_chat(Where::Dm, &FakeUser::new(id, "User"));
    }
    assert_eq!(
        call(&fake, "SendMessageDraft", draft(700, 1, "a")).await.0,
        200
    );
    let (status, body) = call(&fake, "SendMessageDraft", draft(700, 1, "ab")).await;
    assert_eq!(status, 429, "{body}");
    assert!(body["parameters"]["retry_after"].as_u64().is_some());
    assert_eq!(fake.limit_hits().get("per chat drafts"), Some(&1));
    // The chat's messages have their own window; the bot's counts both.
    let send = json!({"chat_id": 700, "text": "final"});
    assert_eq!(call(&fake, "SendMessage", send).await.0, 200);
    assert_eq!(
        call(&fake, "SendMessageDraft", draft(701, 2, "b")).await.0,
        200
    );
    assert_eq!(
        call(&fake, "SendMessageDraft", draft(701, 3, "c")).await.0,
        429
    );
    // The bot's window is full now (two drafts and a message).
    assert_eq!(
        call(&fake, "SendMessage", json!({"chat_id": 701, "text": "x"}))
            .await
            .0,
        429
    );
    assert_eq!(fake.limit_hits().get("per bot"), Some(&1));
}

/// A stream of drafts every 5 ms beside a message every 50 ms, under
/// Telegram's limits scaled down tenfold: the drafts go at their own pace
/// (waiting for their budget, giving way — `Ok(false)` — while a message is
/// on its way), every message goes, nothing gets a 429.
#[tokio::test]
async fn the_adapters_drafts_stay_in_their_budget_and_give_way() {
    let fake = FakeTelegram::start_with(FakeOptions {
        enforce_limits: Some(PublishedLimits::scaled_down(10)),
        ..FakeOptions::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(730, "Ann");
    fake.ensure_chat(Where::Dm, &ann);
    let mut cfg = config(&fake, dir.path());
    cfg.limits = TelegramLimits::scaled_down(10, Duration::from_millis(100));
    let adapter = Arc::new(TelegramAdapter::connect(cfg).await.unwrap());
    let to = ChatAddress::new(Platform::Telegram, ChatId(730), None);
    let id = DraftId::new(42).unwrap();
    assert!(adapter.drafts(&to).is_some());

    let sender = {
        let adapter = adapter.clone();
        tokio::spawn(async move {
            for i in 0..10 {
                let text = format!("message {i}");
                adapter
                    .send(&to, OutgoingMessage::text(text))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let (mut shown, mut gave_way) = (0, 0);
    let mut text = String::new();
    while !sender.is_finished() {
        text.push_str("word ");
        match adapter.draft(&to, id, &text).await {
            Ok(true) => shown += 1,
            Ok(false) => gave_way += 1,
            Err(e) => panic!("a draft failed: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    sender.await.unwrap();
    assert_eq!(fake.bot_messages(730).len(), 10, "every message went");
    assert!(
        shown >= 2 && gave_way >= 1,
        "{shown} shown, {gave_way} gave way"
    );
    assert_eq!(fake.drafts(730).len(), shown);
    assert_eq!(fake.rate_limited_responses(), 0, "{:?}", fake.limit_hits());
    assert_eq!(adapter.rate_limited_count(), 0);

    // A group is no place for drafts, and the adapter does not ask.
    let group = ChatAddress::new(Platform::Telegram, ChatId(-7301), None);
    assert!(adapter.drafts(&group).is_none());
    assert!(matches!(
        adapter.draft(&group, id, "hi").await,
        Err(PlatformError::Unsupported(_))
    ));
    assert!(fake.calls_to("SendMessageDraft").iter().all(|c| c.ok));
}
