//! Discord throughput: the real Discord adapter against the fake Discord on
//! 127.0.0.1, through the whole gateway (real core, instant echo LLM) and alone
//! (an echo loop on the adapter's inbound events, to isolate the adapter's cost).
//!
//! Reports answered messages per second, the latency added (from the
//! MESSAGE_CREATE dispatch to the first REST call carrying the answer) at
//! p50/p99, the 429s the adapter received and, of those, the ones the fake
//! answered because a limit was really exceeded (target: zero). Scenarios:
//! Discord's limits enforced by the fake (a 5-per-5 s bucket per channel, 50
//! req/s per bot) and the adapter's default quotas, plus one injected 429 per
//! channel for three channels and one global; and limits lifted on both sides.
//! All messages are dispatched at once, so latency includes queueing. "known
//! channels": one message in each of BENCH_USERS channels (default 100) whose
//! kind the adapter already learned (a warm-up message each first), Discord's
//! limits, no injected 429s — the bot-wide 50 per second binds, so it also
//! reports the fraction of that ceiling reached. Every row reports the REST
//! calls per answer and the typing share of them. With BENCH_USERS set only
//! that scenario runs.
//!
//! BENCH_CARDS=N first leaves N approval cards open (N more users, each in a
//! channel of their own, ask for a command that needs approval; the cards are
//! never decided) in every gateway scenario, then measures as usual; the
//! adapter-only rows have no core and so no cards.
//!
//! `cargo bench --bench discord_throughput`; under `cargo test --benches` it runs
//! a tiny smoke version. Bounded in count and time; loopback only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "common/cards.rs"]
mod cards;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::fake_discord::{DiscordLimits, FakeDiscord, FakeDiscordOptions, UserMessage, TOKEN};
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use switchboard::Config;
use switchboard_discord::{DiscordAdapter, DiscordConfig};
use switchboard_platform::{Inbound, OutgoingMessage, PlatformAdapter, Quota, Secret};
use tokio_util::sync::CancellationToken;

const FIRST_CHANNEL: u64 = 1_700_000_000_000_000_000;
const FIRST_USER: u64 = 1_800_000_000_000_000_000;
/// Card users and their channels (`BENCH_CARDS`).
const FIRST_CARD_CHANNEL: u64 = 1_750_000_000_000_000_000;
const FIRST_CARD_USER: u64 = 1_850_000_000_000_000_000;
/// No run may take longer than this.
const DEADLINE: Duration = Duration::from_secs(120);

#[derive(Clone, Copy)]
enum Path {
    /// `switchboard::start` with the adapter: store, sessions, turns, LLM.
    Gateway,
    /// The adapter alone: each inbound message is answered straight away.
    AdapterOnly,
}

struct Scenario {
    name: &'static str,
    path: Path,
    channels: u64,
    per_channel: u64,
    limits: bool,
    inject_429s: bool,
    /// One message per channel is answered before measuring, so every
    /// channel's kind is known.
    warm: bool,
}

struct Outcome {
    answered: usize,
    seconds: f64,
    latencies_ms: Vec<f64>,
    rate_limited: u64,
    /// 429s the fake answered because a limit was exceeded (not injected).
    enforced: usize,
    /// REST calls made while measuring, and the typing ones among them.
    calls: usize,
    typing: usize,
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let scenario = |name, path, channels, per_channel, limits| Scenario {
        name,
        path,
        channels,
        per_channel,
        limits,
        inject_429s: limits,
        warm: false,
    };
    let users = std::env::var("BENCH_USERS")
        .ok()
        .and_then(|v| v.parse().ok());
    // BENCH_ADAPTER_ONLY=1: the known-channels rows through the echo loop.
    let adapter_only = std::env::var("BENCH_ADAPTER_ONLY").is_ok_and(|v| v == "1");
    let known = |channels| Scenario {
        name: if adapter_only {
            "adapter, known channels"
        } else {
            "gateway, known channels"
        },
        path: if adapter_only {
            Path::AdapterOnly
        } else {
            Path::Gateway
        },
        channels,
        per_channel: 1,
        limits: true,
        inject_429s: false,
        warm: true,
    };
    let scenarios = if let Some(users) = users.filter(|_| full) {
        vec![known(users)]
    } else if full {
        vec![
            known(100),
            scenario("gateway, discord limits", Path::Gateway, 30, 3, true),
            scenario("gateway, limits lifted", Path::Gateway, 30, 10, false),
            scenario("adapter, discord limits", Path::AdapterOnly, 30, 3, true),
            scenario("adapter, limits lifted", Path::AdapterOnly, 30, 30, false),
        ]
    } else {
        vec![
            scenario("gateway smoke", Path::Gateway, 2, 2, true),
            scenario("adapter smoke", Path::AdapterOnly, 2, 2, true),
        ]
    };
    println!("discord_throughput: real Discord adapter, fake Discord on 127.0.0.1");
    println!(
        "{:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>8} {:>9} {:>8}",
        "scenario",
        "messages",
        "seconds",
        "msg/s",
        "p50 ms",
        "p99 ms",
        "429s",
        "enforced",
        "calls/ans",
        "typing %"
    );
    for scenario in scenarios {
        let outcome = run(&scenario).await;
        let total = (scenario.channels * scenario.per_channel) as usize;
        assert_eq!(
            outcome.answered, total,
            "{}: every message answered",
            scenario.name
        );
        let rate = outcome.answered as f64 / outcome.seconds;
        println!(
            "{:<26} {:>8} {:>8.2} {:>8.1} {:>8.1} {:>8.1} {:>6} {:>8} {:>9.2} {:>8.1}",
            scenario.name,
            outcome.answered,
            outcome.seconds,
            rate,
            percentile(&outcome.latencies_ms, 0.50),
            percentile(&outcome.latencies_ms, 0.99),
            outcome.rate_limited,
            outcome.enforced,
            outcome.calls as f64 / outcome.answered.max(1) as f64,
            outcome.typing as f64 * 100.0 / outcome.calls.max(1) as f64,
        );
        if scenario.warm {
            // The default bot quota: 50 per 1 s within a 50 ms margin.
            let period = switchboard_platform::Pacer::quota_within(
                50,
                Duration::from_secs(1),
                1,
                Duration::from_millis(50),
            )
            .replenish_interval();
            let ceiling = 1.0 / period.as_secs_f64();
            println!(
                "{:<26} {:.0} % of the {ceiling:.1} answers/s ceiling",
                "",
                rate / ceiling * 100.0
            );
        }
    }
}

fn discord_config(discord: &FakeDiscord, limits: bool) -> DiscordConfig {
    let mut config = DiscordConfig::new(Secret::new(TOKEN));
    config.api_url = Some(discord.api_url.clone());
    if !limits {
        let lots = NonZeroU32::new(100_000).unwrap();
        config.channel_quota = Quota::per_second(lots);
        config.bot_quota = Quota::per_second(lots);
    }
    config
}

async fn run(scenario: &Scenario) -> Outcome {
    let discord = FakeDiscord::start_with(FakeDiscordOptions {
        limits: scenario.limits.then(DiscordLimits::default),
        ..FakeDiscordOptions::default()
    })
    .await;
    for c in 0..scenario.channels {
        discord.add_text_channel(FIRST_CHANNEL + c);
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut config = discord_config(&discord, scenario.limits);
    if matches!(scenario.path, Path::Gateway) {
        // As `switchboard run` sets it: channel marks kept across restarts,
        // and the core drops repeated deliveries (one database row each).
        config.state_dir = Some(data.clone());
    }
    let adapter = Arc::new(DiscordAdapter::connect(config).await.expect("connect"));
    let shutdown = CancellationToken::new();
    // Kept alive for the whole run: the gateway's LLM and store, or the echo loop.
    let _llm;
    let mut stopped = None;
    match scenario.path {
        Path::Gateway => {
            let llm = FakeLlm::start().await;
            llm.set_responder(|request| {
                let asked = last_user_text(request).unwrap_or_default();
                if let Some(card) = cards::model_reply(&asked) {
                    return card;
                }
                Reply::text(&format!(
                    "ok-{}",
                    asked.split_whitespace().last().unwrap_or("?")
                ))
            });
            let env: HashMap<&str, String> = [
                ("LLM_BASE_URL", llm.base_url()),
                ("LLM_MODEL", "fake-model".to_owned()),
                ("DATA_DIR", data.display().to_string()),
                (
                    "DATABASE_URL",
                    format!("sqlite://{}", data.join("bench.db").display()),
                ),
                ("WORKSPACE_DIR", dir.path().join("ws").display().to_string()),
                ("ACCESS_POLICY", "open".to_owned()),
                ("USER_MESSAGES_PER_MINUTE", "10000".to_owned()),
            ]
            .into_iter()
            .collect();
            let config = Config::from_lookup(|k| env.get(k).cloned()).expect("core config");
            let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![adapter.clone()];
            let running = switchboard::start(&config, adapters, shutdown.clone())
                .await
                .expect("start");
            stopped = Some(running);
            _llm = Some(llm);
        }
        Path::AdapterOnly => {
            let (tx, mut rx) = support::intake::acking(1024);
            let runner = adapter.clone();
            let token = shutdown.clone();
            tokio::spawn(async move { runner.run(tx, token).await });
            let echo = adapter.clone();
            tokio::spawn(async move {
                while let Some(Inbound::Message(m)) = rx.recv().await {
                    let n = m.text.split_whitespace().last().unwrap_or("?").to_owned();
                    let answer =
                        OutgoingMessage::text(format!("ok-{n}")).replying_to(Some(m.message_id));
                    let echo = echo.clone();
                    tokio::spawn(async move { echo.send(&m.chat, answer).await });
                }
            });
            _llm = None;
        }
    }
    assert!(discord.wait_ready(1).await, "shard ready");
    if matches!(scenario.path, Path::Gateway) {
        open_cards(&discord, cards::wanted()).await;
    }
    // The cards' 429s are not the measurement's.
    let limited_before = adapter.rate_limited_count();
    let enforced_before: usize = discord.limit_hits().values().sum();
    if scenario.inject_429s {
        for c in 0..scenario.channels.min(3) {
            discord.rate_limit_channel(FIRST_CHANNEL + c, 1, 1.0);
        }
        discord.rate_limit_global(1, 0.5);
    }
    if scenario.warm {
        warm_up(&discord, scenario.channels).await;
    }
    let outcome = measure(&discord, scenario).await;
    let rate_limited = adapter.rate_limited_count() - limited_before;
    let enforced = discord.limit_hits().values().sum::<usize>() - enforced_before;
    shutdown.cancel();
    if let Some(running) = stopped {
        let _ = tokio::time::timeout(Duration::from_secs(20), running.wait()).await;
    }
    Outcome {
        rate_limited,
        enforced,
        ..outcome
    }
}

/// Dispatches every message at once and times the first REST call carrying
/// each answer.
async fn measure(discord: &FakeDiscord, scenario: &Scenario) -> Outcome {
    let before = discord.calls().len();
    let start = Instant::now();
    let mut sent_at = HashMap::new();
    for round in 0..scenario.per_channel {
        for c in 0..scenario.channels {
            let n = round * scenario.channels + c;
            let message = UserMessage::new(
                FIRST_CHANNEL + c,
                FIRST_USER + c,
                format!("please answer {n}"),
            )
            .mentioning_bot();
            sent_at.insert(format!("ok-{n}"), Instant::now());
            discord.send_message(message).expect("dispatched");
        }
    }
    let deadline = start + DEADLINE;
    let mut first_seen: HashMap<String, Instant> = HashMap::new();
    let mut scanned = 0;
    while first_seen.len() < sent_at.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let calls = discord.calls();
        for call in &calls[scanned..] {
            let content = call.body["content"].as_str().unwrap_or_default();
            if call.status < 300 && sent_at.contains_key(content) {
                first_seen.entry(content.to_owned()).or_insert(call.at);
            }
        }
        scanned = calls.len();
    }
    let seconds = first_seen
        .values()
        .max()
        .map_or(DEADLINE, |last| last.duration_since(start))
        .as_secs_f64();
    let latencies_ms = first_seen
        .iter()
        .map(|(answer, at)| at.duration_since(sent_at[answer]).as_secs_f64() * 1000.0)
        .collect();
    // Typing of turns still running when the last answer went out counts too.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let calls = discord.calls().split_off(before);
    Outcome {
        answered: first_seen.len(),
        seconds,
        latencies_ms,
        rate_limited: 0,
        enforced: 0,
        calls: calls.len(),
        typing: calls.iter().filter(|c| c.path.ends_with("/typing")).count(),
    }
}

/// `n` more users each ask for a command that needs approval in a channel of
/// their own; returns once every card is shown (the turns paused, waiting).
async fn open_cards(discord: &FakeDiscord, n: usize) {
    if n == 0 {
        return;
    }
    let start = tokio::time::Instant::now();
    let channel = |i: usize| FIRST_CARD_CHANNEL + i as u64;
    for i in 0..n {
        discord.add_text_channel(channel(i));
        let ask = UserMessage::new(channel(i), FIRST_CARD_USER + i as u64, cards::OPEN_A_CARD)
            .mentioning_bot();
        discord.send_message(ask).expect("dispatched");
    }
    cards::wait_shown(n, start, |i| discord.card(channel(i)).is_some()).await;
}

/// One message per channel, answered, so the adapter knows every channel.
async fn warm_up(discord: &FakeDiscord, channels: u64) {
    for c in 0..channels {
        let message = UserMessage::new(FIRST_CHANNEL + c, FIRST_USER + c, format!("warm w{c}"))
            .mentioning_bot();
        discord.send_message(message).expect("dispatched");
    }
    let deadline = Instant::now() + DEADLINE;
    let wanted: std::collections::HashSet<String> =
        (0..channels).map(|c| format!("ok-w{c}")).collect();
    let mut answered = false;
    while !answered && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let seen = discord
            .calls()
            .iter()
            .filter(|c| c.status < 300)
            .filter_map(|c| c.body["content"].as_str().map(str::to_owned))
            .filter(|c| wanted.contains(c))
            .collect::<std::collections::HashSet<_>>()
            .len();
        answered = seen == wanted.len();
    }
    assert!(answered, "warm-up not answered");
    // Let the channel buckets refill before measuring.
    tokio::time::sleep(Duration::from_secs(5)).await;
}

fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}
