//! Rate limits against a fake Discord that enforces them itself (a 5-per-5 s
//! bucket per channel for message creates and edits, 50 requests per second
//! per bot, Discord's 429 body and headers): the fake refuses the request past
//! each limit, and the adapter's quotas never make it refuse one. Windows are
//! scaled down so the tests cross them in seconds; no test asserts wall time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::fake_discord::{DiscordLimits, FakeDiscord, FakeDiscordOptions, Rate, TOKEN};
use switchboard_discord::{DiscordAdapter, DiscordConfig};
use switchboard_platform::{
    ChatAddress, ChatId, OutgoingMessage, Pacer, Platform, PlatformAdapter, Quota, Secret,
};

const CHANNEL: u64 = 1_200_000_000_000_000_101;
/// Jitter allowance of the scaled-down quotas: generous, since these windows
/// are short and the machine may be busy; a loose limiter overshoots by far more.
const MARGIN: Duration = Duration::from_millis(100);

async fn fake_with(limits: DiscordLimits) -> FakeDiscord {
    FakeDiscord::start_with(FakeDiscordOptions {
        limits: Some(limits),
        ..FakeDiscordOptions::default()
    })
    .await
}

async fn adapter(fake: &FakeDiscord, channel_quota: Quota, bot_quota: Quota) -> DiscordAdapter {
    let mut config = DiscordConfig::new(Secret::new(TOKEN));
    config.api_url = Some(fake.api_url.clone());
    config.channel_quota = channel_quota;
    config.bot_quota = bot_quota;
    DiscordAdapter::connect(config).await.unwrap()
}

fn channel(id: u64) -> ChatAddress {
    ChatAddress::new(Platform::Discord, ChatId(id as i64), None)
}

fn contents(fake: &FakeDiscord, channel: u64) -> Vec<String> {
    fake.bot_messages(channel)
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Sends one REST request straight to the fake; returns (status, headers, body).
async fn request(
    fake: &FakeDiscord,
    method: reqwest::Method,
    path: &str,
    body: Option<String>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{}/api/v10{path}", fake.api_url))
        .header("authorization", format!("Bot {TOKEN}"))
        .header("content-type", "application/json");
    if let Some(body) = body {
        req = req.body(body);
    }
    let response = req.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, headers, body)
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

#[tokio::test]
async fn the_fake_refuses_the_sixth_message_in_a_channel_bucket() {
    let fake = FakeDiscord::start().await; // Discord's own limits
    fake.add_text_channel(CHANNEL);
    let path = format!("/channels/{CHANNEL}/messages");
    let mut first = 0;
    for i in 0..5 {
        let body = json!({ "content": format!("m{i}") }).to_string();
        let (status, headers, message) =
            request(&fake, reqwest::Method::POST, &path, Some(body)).await;
        assert_eq!(status, 200, "{message}");
        assert_eq!(header(&headers, "x-ratelimit-limit"), "5");
        assert_eq!(
            header(&headers, "x-ratelimit-remaining"),
            (4 - i).to_string()
        );
        assert!(!header(&headers, "x-ratelimit-bucket").is_empty());
        first = support::fake_discord::message_id(&message);
    }
    // The 6th within 5 s of the bucket's first request, create or edit alike.
    let edit = json!({ "content": "edited" }).to_string();
    let (status, headers, body) = request(
        &fake,
        reqwest::Method::PATCH,
        &format!("{path}/{first}"),
        Some(edit),
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(body["message"], "You are being rate limited.");
    assert_eq!(body["global"], false);
    let retry_after = body["retry_after"].as_f64().unwrap();
    assert!(retry_after > 0.0 && retry_after <= 5.0, "{body}");
    assert_eq!(
        header(&headers, "retry-after"),
        (retry_after.ceil() as u64).to_string()
    );
    assert_eq!(header(&headers, "x-ratelimit-remaining"), "0");
    assert_eq!(header(&headers, "x-ratelimit-scope"), "user");
    assert!(headers.get("x-ratelimit-global").is_none());
    let reset_after: f64 = header(&headers, "x-ratelimit-reset-after").parse().unwrap();
    assert!((reset_after - retry_after).abs() < 0.01);
    assert_eq!(fake.limit_hits().get("channel"), Some(&1));
    assert_eq!(
        contents(&fake, CHANNEL)[0],
        "m0",
        "the refused edit changed nothing"
    );
    // Another channel has its own bucket.
    fake.add_text_channel(CHANNEL + 1);
    let body = json!({ "content": "elsewhere" }).to_string();
    let other = format!("/channels/{}/messages", CHANNEL + 1);
    assert_eq!(
        request(&fake, reqwest::Method::POST, &other, Some(body))
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn the_fake_refuses_requests_past_the_global_limit() {
    let fake = fake_with(DiscordLimits {
        global: Rate::new(3, Duration::from_secs(60)),
        ..DiscordLimits::default()
    })
    .await;
    for _ in 0..3 {
        assert_eq!(
            request(&fake, reqwest::Method::GET, "/users/@me", None)
                .await
                .0,
            200
        );
    }
    let (status, headers, body) = request(&fake, reqwest::Method::GET, "/users/@me", None).await;
    assert_eq!(status, 429);
    assert_eq!(body["global"], true);
    assert!(body["retry_after"].as_f64().unwrap() > 59.0, "{body}");
    assert_eq!(header(&headers, "x-ratelimit-global"), "true");
    assert_eq!(header(&headers, "x-ratelimit-scope"), "global");
    assert_eq!(header(&headers, "retry-after"), "60");
    // Interaction endpoints are outside the global limit (this one is unknown).
    let (status, _, body) = request(
        &fake,
        reqwest::Method::POST,
        "/interactions/123/tok/callback",
        Some(json!({ "type": 6 }).to_string()),
    )
    .await;
    assert_eq!((status, body["code"].as_u64()), (404, Some(10062)));
    assert_eq!(fake.limit_hits().get("global"), Some(&1));
}

#[tokio::test]
async fn a_body_that_is_not_json_is_refused_with_50109() {
    let fake = FakeDiscord::start().await;
    fake.add_text_channel(CHANNEL);
    let path = format!("/channels/{CHANNEL}/messages");
    let (status, _, body) =
        request(&fake, reqwest::Method::POST, &path, Some("{nope".into())).await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (400, Some(50109)),
        "{body}"
    );
    let (status, _, body) = request(
        &fake,
        reqwest::Method::PATCH,
        &format!("{path}/1"),
        Some("content=hi".into()),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_u64()),
        (400, Some(50109)),
        "{body}"
    );
    assert!(fake.bot_messages(CHANNEL).is_empty());
}

#[tokio::test]
async fn a_long_answer_in_one_channel_gets_no_429() {
    // 5 per second per channel: eight chunks cross the bucket at least once.
    let fake = fake_with(DiscordLimits::scaled_down(5)).await;
    fake.add_text_channel(CHANNEL);
    let ours = Pacer::quota_within(5, Duration::from_secs(1), 2, MARGIN);
    let bot = Pacer::quota_within(50, Duration::from_millis(200), 3, MARGIN);
    let adapter = Arc::new(adapter(&fake, ours, bot).await);
    let expected: Vec<String> = (0..8).map(|i| format!("chunk {i}")).collect();
    let mut tasks = Vec::new();
    for text in &expected {
        let (adapter, text) = (adapter.clone(), text.clone());
        tasks.push(tokio::spawn(async move {
            adapter
                .send(&channel(CHANNEL), OutgoingMessage::text(text))
                .await
        }));
        // Queue in this order (the pacer is FIFO per channel).
        tokio::task::yield_now().await;
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(contents(&fake, CHANNEL), expected, "each once, in order");
    assert_eq!(fake.rate_limited(), 0, "{:?}", fake.limit_hits());
    assert_eq!(adapter.rate_limited_count(), 0);
    let posts: Vec<_> = fake
        .calls()
        .into_iter()
        .filter(|c| c.method == "POST")
        .collect();
    assert!(
        posts[7].at.duration_since(posts[0].at) >= Duration::from_secs(1),
        "8 > 5 per bucket"
    );
    // The waits reach the adapter's histogram (`switchboard_pacer_wait_seconds`):
    // the last chunk queued for about a second.
    let waits = adapter.pacer_waits().expect("a paced adapter");
    assert!(waits.count >= 8, "{waits:?}");
    let long: u64 = waits
        .buckets
        .iter()
        .filter(|(le, _)| *le > 0.64)
        .map(|(_, n)| n)
        .sum();
    assert!(long >= 1, "{waits:?}");
}

#[tokio::test]
async fn many_channels_at_once_stay_within_the_global_limit() {
    // 10 requests per 200 ms for the bot; channels' buckets out of the way.
    let fake = fake_with(DiscordLimits {
        channel_messages: Rate::new(1_000, Duration::from_secs(1)),
        global: Rate::new(10, Duration::from_millis(200)),
    })
    .await;
    let channels: Vec<u64> = (0..30).map(|i| CHANNEL + 10 + i).collect();
    for c in &channels {
        fake.add_text_channel(*c);
    }
    let ours = Pacer::quota_within(1_000, Duration::from_secs(1), 2, MARGIN);
    let bot = Pacer::quota_within(10, Duration::from_millis(200), 3, MARGIN);
    let adapter = Arc::new(adapter(&fake, ours, bot).await);
    let mut tasks = Vec::new();
    for c in &channels {
        let (adapter, c) = (adapter.clone(), *c);
        tasks.push(tokio::spawn(async move {
            adapter
                .send(&channel(c), OutgoingMessage::text(format!("to {c}")))
                .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    for c in &channels {
        assert_eq!(contents(&fake, *c), [format!("to {c}")]);
    }
    assert_eq!(fake.rate_limited(), 0, "{:?}", fake.limit_hits());
    assert_eq!(adapter.rate_limited_count(), 0);
}
