//! Typing indicators at the pacers' lowest priority, against fakes that
//! enforce the platforms' limits: under a backlog of messages typing gives way
//! (it is skipped, not queued), and on Discord a quick answer types not at all.
//! Windows are scaled down so the tests cross them in seconds; no test asserts
//! wall time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;
use support::fake_discord::{
    DiscordLimits, FakeDiscord, FakeDiscordOptions, Rate, TOKEN as DTOKEN,
};
use support::fake_telegram::{FakeOptions, FakeTelegram, FakeUser, PublishedLimits, Where, TOKEN};
use switchboard_discord::{DiscordAdapter, DiscordConfig};
use switchboard_platform::{
    Activity, ChatAddress, ChatId, OutgoingMessage, Pacer, Platform, PlatformAdapter, Secret,
};
use switchboard_telegram::{TelegramAdapter, TelegramConfig, TelegramLimits};

const MARGIN: Duration = Duration::from_millis(100);
/// Chats with a turn running and messages queued in each.
const CHATS: usize = 20;
const MESSAGES_PER_CHAT: usize = 3;

fn tg_addr(chat: i64) -> ChatAddress {
    ChatAddress::new(Platform::Telegram, ChatId(chat), None)
}

fn dc_addr(channel: u64) -> ChatAddress {
    ChatAddress::new(Platform::Discord, ChatId(channel as i64), None)
}

/// Sends `MESSAGES_PER_CHAT` messages to every chat at once (a backlog) and
/// waits until all are out.
async fn backlog<A>(adapter: &Arc<A>, chats: &[ChatAddress])
where
    A: PlatformAdapter + 'static,
{
    let mut tasks = Vec::new();
    for i in 0..MESSAGES_PER_CHAT {
        for chat in chats {
            let (adapter, chat) = (adapter.clone(), *chat);
            tasks.push(tokio::spawn(async move {
                adapter
                    .send(&chat, OutgoingMessage::text(format!("part {i}")))
                    .await
            }));
            tokio::task::yield_now().await;
        }
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
}

/// Typing calls among `calls`, and how many calls there were.
fn share<C>(calls: &[C], is_typing: impl Fn(&C) -> bool) -> (usize, usize) {
    (calls.iter().filter(|c| is_typing(c)).count(), calls.len())
}

#[tokio::test]
async fn telegram_typing_gives_way_to_a_backlog_of_messages() {
    let fake = FakeTelegram::start_with(FakeOptions {
        enforce_limits: Some(PublishedLimits::scaled_down(10)),
        ..FakeOptions::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = TelegramConfig::new(Secret::new(TOKEN), dir.path());
    config.api_url = Some(fake.api_url().parse().unwrap());
    config.limits = TelegramLimits {
        per_chat: Pacer::quota_within(1, Duration::from_millis(100), 1, MARGIN / 2),
        per_group: Pacer::quota_within(20, Duration::from_secs(6), 3, MARGIN),
        per_bot: Pacer::quota_within(30, Duration::from_millis(100), 1, MARGIN),
    };
    config.typing_interval = Duration::from_millis(20);
    let adapter = Arc::new(TelegramAdapter::connect(config).await.unwrap());
    let chats: Vec<ChatAddress> = (0..CHATS as i64)
        .map(|i| {
            fake.ensure_chat(Where::Dm, &FakeUser::new(7600 + i, "U"));
            tg_addr(7600 + i)
        })
        .collect();
    for chat in &chats {
        adapter.activity(chat, Activity::Typing).await.unwrap();
    }
    let before = fake.calls().len();
    backlog(&adapter, &chats).await;
    let during: Vec<_> = fake.calls().split_off(before);
    let (typing, all) = share(&during, |c| c.method == "SendChatAction");
    assert!(
        typing * 10 <= all,
        "typing was {typing} of {all} calls under a backlog"
    );
    assert_eq!(fake.rate_limited_responses(), 0, "{:?}", fake.limit_hits());
    // With the backlog gone the indicators are renewed again.
    let after = fake.calls_to("SendChatAction").len();
    assert!(
        fake.wait_until(Duration::from_secs(10), |f| f
            .calls_to("SendChatAction")
            .len()
            > after)
            .await,
        "typing never came back"
    );
    for chat in &chats {
        adapter.activity(chat, Activity::Idle).await.unwrap();
    }
}

async fn discord(
    limits: DiscordLimits,
    tweak: impl FnOnce(&mut DiscordConfig),
) -> (FakeDiscord, Arc<DiscordAdapter>) {
    let fake = FakeDiscord::start_with(FakeDiscordOptions {
        limits: Some(limits),
        ..FakeDiscordOptions::default()
    })
    .await;
    let mut config = DiscordConfig::new(Secret::new(DTOKEN));
    config.api_url = Some(fake.api_url.clone());
    tweak(&mut config);
    let adapter = Arc::new(DiscordAdapter::connect(config).await.unwrap());
    (fake, adapter)
}

#[tokio::test]
async fn discord_typing_gives_way_to_a_backlog_of_messages() {
    // Discord's limits ten times faster: 5 per 500 ms a channel, 50 per 100 ms.
    let (fake, adapter) = discord(
        DiscordLimits {
            channel_messages: Rate::new(5, Duration::from_millis(500)),
            global: Rate::new(50, Duration::from_millis(100)),
        },
        |c| {
            c.channel_quota = Pacer::quota_within(5, Duration::from_millis(500), 2, MARGIN);
            c.bot_quota = Pacer::quota_within(50, Duration::from_millis(100), 1, MARGIN);
            c.timings.typing_delay = Duration::ZERO;
            c.timings.typing_interval = Duration::from_millis(20);
        },
    )
    .await;
    let channels: Vec<ChatAddress> = (0..CHATS as u64)
        .map(|i| {
            fake.add_text_channel(1_300_000_000_000_000_000 + i);
            dc_addr(1_300_000_000_000_000_000 + i)
        })
        .collect();
    for chat in &channels {
        adapter.activity(chat, Activity::Typing).await.unwrap();
    }
    let before = fake.calls().len();
    backlog(&adapter, &channels).await;
    let during: Vec<_> = fake.calls().split_off(before);
    let (typing, all) = share(&during, |c| c.path.ends_with("/typing"));
    assert!(
        typing * 10 <= all,
        "typing was {typing} of {all} calls under a backlog"
    );
    assert_eq!(fake.rate_limited(), 0, "{:?}", fake.limit_hits());
    for chat in &channels {
        adapter.activity(chat, Activity::Idle).await.unwrap();
    }
}

#[tokio::test]
async fn discord_types_only_for_turns_that_outlast_the_delay() {
    let (fake, adapter) = discord(DiscordLimits::default(), |c| {
        c.timings.typing_delay = Duration::from_millis(300);
        c.timings.typing_interval = Duration::from_millis(50);
    })
    .await;
    let (quick, slow) = (1_300_000_000_000_000_101, 1_300_000_000_000_000_102);
    fake.add_text_channel(quick);
    fake.add_text_channel(slow);
    // A quick turn: answered and idle before the delay is up.
    adapter
        .activity(&dc_addr(quick), Activity::Typing)
        .await
        .unwrap();
    adapter
        .activity(&dc_addr(slow), Activity::Typing)
        .await
        .unwrap();
    adapter
        .send(&dc_addr(quick), OutgoingMessage::text("Four."))
        .await
        .unwrap();
    adapter
        .activity(&dc_addr(quick), Activity::Idle)
        .await
        .unwrap();
    // The slow turn's indicator starts once the delay is up...
    assert!(fake.wait_for(|f| f.typing_calls(slow) >= 2).await);
    // ...by when the quick turn's would have started too.
    assert_eq!(fake.typing_calls(quick), 0, "a quick answer typed");
    assert_eq!(fake.bot_messages(quick).len(), 1);
    adapter
        .activity(&dc_addr(slow), Activity::Idle)
        .await
        .unwrap();
}
