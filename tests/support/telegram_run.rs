//! Running the Telegram adapter by itself against the fake Bot API, for the
//! adapter's own tests (`telegram_adapter.rs`, `telegram_updates.rs`).

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use switchboard_platform::{
    ActionId, Button, ButtonPress, ButtonStyle, ChatAddress, ChatId, Inbound, InboundMessage,
    OutgoingMessage, Platform, PlatformAdapter, PlatformError, Quota, Secret, ThreadId,
};
use switchboard_telegram::{TelegramAdapter, TelegramConfig, TelegramLimits};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::fake_telegram::{FakeTelegram, TOKEN};

pub const WAIT: Duration = Duration::from_secs(10);

/// Fast quotas keep these tests quick; they run against a fake without flood
/// limits (flood control is tested in `telegram_limits.rs`).
pub fn fast_limits() -> TelegramLimits {
    let per_second = |n| Quota::per_second(NonZeroU32::new(n).unwrap());
    TelegramLimits {
        per_chat: per_second(200),
        per_group: per_second(100_000),
        per_bot: per_second(2_000),
    }
}

pub fn config(fake: &FakeTelegram, dir: &Path) -> TelegramConfig {
    let mut c = TelegramConfig::new(Secret::new(TOKEN), dir);
    c.api_url = Some(fake.api_url().parse().unwrap());
    c.poll_timeout_secs = 1;
    c.limits = fast_limits();
    c.press_answer_timeout = Duration::from_secs(30);
    c.approvers.insert(900);
    c
}

pub struct Running {
    pub adapter: Arc<TelegramAdapter>,
    pub rx: super::intake::Received,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<Result<(), PlatformError>>,
}

impl Running {
    pub async fn start(config: TelegramConfig) -> Running {
        let adapter = Arc::new(TelegramAdapter::connect(config).await.unwrap());
        let (tx, rx) = super::intake::acking(64);
        let shutdown = CancellationToken::new();
        let (a, s) = (adapter.clone(), shutdown.clone());
        let task = tokio::spawn(async move { a.run(tx, s).await });
        Running {
            adapter,
            rx,
            shutdown,
            task,
        }
    }

    pub async fn next(&mut self) -> Inbound {
        tokio::time::timeout(WAIT, self.rx.recv())
            .await
            .expect("timed out waiting for an inbound event")
            .expect("adapter closed the sink")
    }

    pub async fn next_message(&mut self) -> InboundMessage {
        match self.next().await {
            Inbound::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    pub async fn next_press(&mut self) -> ButtonPress {
        match self.next().await {
            Inbound::ButtonPress(p) => p,
            other => panic!("expected a press, got {other:?}"),
        }
    }

    pub async fn stop(self) -> super::intake::Received {
        self.shutdown.cancel();
        let ended = tokio::time::timeout(WAIT, self.task).await;
        assert!(
            matches!(ended, Ok(Ok(Ok(())))),
            "run did not end cleanly: {ended:?}"
        );
        self.rx
    }
}

pub fn addr(chat: i64, thread: Option<i64>) -> ChatAddress {
    ChatAddress::new(Platform::Telegram, ChatId(chat), thread.map(ThreadId))
}

pub fn card(text: &str, ids: &[&str]) -> OutgoingMessage {
    let row = ids
        .iter()
        .map(|id| Button {
            label: format!("Do {id}"),
            action: ActionId::parse(id).unwrap(),
            style: ButtonStyle::Primary,
            shortcut: None,
        })
        .collect();
    OutgoingMessage::text(text).with_buttons(vec![row])
}

/// Posts a Bot API call straight to the fake; returns (HTTP status, body).
pub async fn raw_call(
    fake: &FakeTelegram,
    method: &str,
    params: serde_json::Value,
) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .post(format!("{}bot{TOKEN}/{method}", fake.api_url()))
        .json(&params)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}
