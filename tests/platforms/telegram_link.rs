//! The Telegram adapter's connection as the web console shows it: connected
//! while polling works, reconnecting with the (scrubbed) error while
//! `getUpdates` fails, connected again after — the last error kept.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::fake_telegram::{FakeTelegram, TOKEN};
use support::telegram_run::{config, raw_call, Running, WAIT};
use switchboard_platform::{LinkState, PlatformAdapter};

async fn wait_state(r: &Running, state: LinkState) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while r.adapter.link().state != state {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never {state:?}: {:?}",
            r.adapter.link()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_failing_poll_shows_as_reconnecting_then_connected() {
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = Running::start(config(&fake, dir.path())).await;
    wait_state(&r, LinkState::Connected).await;
    assert!(r.adapter.link().last_error.is_none());

    // A webhook set elsewhere makes every getUpdates a 409.
    let (status, _) = raw_call(
        &fake,
        "setWebhook",
        json!({ "url": "https://example.com/hook" }),
    )
    .await;
    assert_eq!(status, 200);
    wait_state(&r, LinkState::Reconnecting).await;
    let (_, error) = r.adapter.link().last_error.unwrap();
    assert!(error.contains("Conflict"), "{error}");
    assert!(!error.contains(TOKEN), "{error}");

    raw_call(&fake, "deleteWebhook", json!({})).await;
    wait_state(&r, LinkState::Connected).await;
    assert!(
        r.adapter.link().last_error.is_some(),
        "the last error is kept"
    );
    r.stop().await;
}
