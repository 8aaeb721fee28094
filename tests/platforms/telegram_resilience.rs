//! Telegram long polling through failures: another poller with the same
//! token (409 Conflict), a proxy's 502, a broken connection. The adapter
//! logs the streak clearly once (then every tenth failure, and once when it
//! recovers), backs off exponentially up to its cap instead of spinning,
//! shows the link as reconnecting meanwhile, and once `getUpdates` works
//! again nothing queued during the outage is lost or doubled.
//!
//! No test reads a duration: the backoff is checked by counting the calls
//! the fake saw against the time that passed. Every wait is at least the
//! cap once the backoff reached it, so `m` calls need `(m - 1) × cap`; a
//! slow machine only makes fewer calls, a spin would make hundreds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;
use crate::telegram_updates::{captured_logs, logs_text};

use std::sync::Arc;
use std::time::Duration;
use support::fake_telegram::{FakeTelegram, FakeUser, PollFault, Where};
use support::telegram_run::{config, Running, WAIT};
use switchboard_platform::{LinkState, PlatformAdapter};
use switchboard_telegram::TelegramAdapter;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

const FIRST_WAIT: Duration = Duration::from_millis(40);
const CAP: Duration = Duration::from_millis(320);
/// Failures after which every wait is the cap (40, 80, 160, 320, 320…).
const AT_CAP: usize = 4;

/// The adapter polling `fake`, its logs tagged with `case`.
async fn start(fake: &FakeTelegram, dir: &std::path::Path, case: &'static str) -> Running {
    let mut c = config(fake, dir);
    c.poll_backoff = FIRST_WAIT;
    c.poll_backoff_max = CAP;
    let adapter = Arc::new(TelegramAdapter::connect(c).await.unwrap());
    let (tx, rx) = support::intake::acking(64);
    let shutdown = CancellationToken::new();
    let (a, s) = (adapter.clone(), shutdown.clone());
    let span = tracing::info_span!("resilience", case);
    let task = tokio::spawn(async move { a.run(tx, s).await }.instrument(span));
    Running {
        adapter,
        rx,
        shutdown,
        task,
    }
}

async fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check() {
        assert!(Instant::now() < deadline, "never {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The captured log lines of `case` at `level` that contain `text`.
fn log_lines(case: &str, level: &str, text: &str) -> Vec<String> {
    let tag = format!("case=\"{case}\"");
    let tag_bare = format!("case={case}");
    logs_text()
        .lines()
        .filter(|l| l.contains(&tag) || l.contains(&tag_bare))
        .filter(|l| l.contains(level) && l.contains(text))
        .map(str::to_owned)
        .collect()
}

async fn polling_survives(fault: PollFault, case: &'static str, hint: &str) {
    captured_logs();
    let fake = FakeTelegram::start_lenient().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ann = FakeUser::new(981, "Ann");
    let mut r = start(&fake, dir.path(), case).await;
    fake.message(Where::Dm, &ann, "before");
    assert_eq!(r.next_message().await.text, "before");

    fake.fail_polls(Some(fault));
    // Queued while polling fails: it must come once, after.
    fake.message(Where::Dm, &ann, "during");
    wait_until("the backoff at its cap", || fake.failed_polls() > AT_CAP).await;
    assert_eq!(r.adapter.link().state, LinkState::Reconnecting);

    // Calls against time: 3 more failures, then no more than the cap allows.
    let since = Instant::now();
    let before = fake.failed_polls();
    wait_until("3 more polls", || fake.failed_polls() >= before + 3).await;
    let calls = fake.failed_polls() - before;
    let budget = (since.elapsed().as_millis() / CAP.as_millis()) as usize + 1;
    assert!(
        calls <= budget,
        "{calls} polls where the backoff allows {budget}: a spin"
    );

    fake.fail_polls(None);
    assert_eq!(r.next_message().await.text, "during");
    fake.message(Where::Dm, &ann, "after");
    assert_eq!(
        r.next_message().await.text,
        "after",
        "nothing doubled before it"
    );
    assert_eq!(r.adapter.link().state, LinkState::Connected);
    let failures = fake.failed_polls();
    let mut rx = r.stop().await;
    assert!(rx.is_empty(), "nothing else was forwarded");

    // One clear line per streak (then every tenth failure), not one per retry.
    let warned = log_lines(case, "WARN", "Telegram getUpdates failed");
    assert_eq!(warned.len(), 1 + failures / 10, "{warned:#?}");
    assert!(warned[0].contains(hint), "{}", warned[0]);
    assert!(!warned[0].contains(support::fake_telegram::TOKEN));
    let debug = log_lines(case, "DEBUG", "getUpdates failed");
    assert_eq!(debug.len(), failures - warned.len(), "the others at debug");
    let back = log_lines(case, "INFO", "Telegram getUpdates works again");
    assert_eq!(back.len(), 1, "{back:#?}");
}

#[tokio::test]
async fn another_poller_409_is_logged_once_and_backed_off() {
    polling_survives(
        PollFault::Conflict,
        "conflict",
        "another process is polling with this bot token",
    )
    .await;
}

#[tokio::test]
async fn a_bad_gateway_is_logged_once_and_backed_off() {
    polling_survives(PollFault::BadGateway, "bad-gateway", "HTTP 502").await;
}

#[tokio::test]
async fn a_broken_connection_is_logged_once_and_backed_off() {
    polling_survives(PollFault::Network, "network", "cannot be reached").await;
}
