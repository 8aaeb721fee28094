//! Discord throughput through the whole gateway: the real core and Discord
//! adapter against the fake Discord and an instant echo LLM, all on 127.0.0.1.
//!
//! Reports answered messages per second, the latency the gateway adds (from the
//! MESSAGE_CREATE dispatch to the first REST call carrying the answer; the fake
//! LLM answers at once) at p50/p99, and the 429s received. Two scenarios: with
//! Discord's limits (5 msg / 5 s per channel, 50 req/s per bot, a few injected
//! 429s) and with the limits lifted (the gateway's own overhead).
//!
//! `cargo bench --bench discord_throughput`; under `cargo test --benches` it runs
//! a tiny smoke version. Bounded in count and time; loopback only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::fake_discord::{FakeDiscord, UserMessage, TOKEN};
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use switchboard::Config;
use switchboard_discord::{DiscordAdapter, DiscordConfig};
use switchboard_platform::{PlatformAdapter, Quota, Secret};
use tokio_util::sync::CancellationToken;

const FIRST_CHANNEL: u64 = 1_700_000_000_000_000_000;
const FIRST_USER: u64 = 1_800_000_000_000_000_000;
/// No run may take longer than this.
const DEADLINE: Duration = Duration::from_secs(120);

struct Scenario {
    name: &'static str,
    channels: u64,
    per_channel: u64,
    limits: bool,
    inject_429s: bool,
}

struct Outcome {
    answered: usize,
    seconds: f64,
    latencies_ms: Vec<f64>,
    rate_limited: u64,
}

#[tokio::main]
async fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let scenarios = if full {
        vec![
            Scenario {
                name: "discord limits + 429s",
                channels: 30,
                per_channel: 3,
                limits: true,
                inject_429s: true,
            },
            Scenario {
                name: "limits lifted",
                channels: 30,
                per_channel: 10,
                limits: false,
                inject_429s: false,
            },
        ]
    } else {
        vec![Scenario {
            name: "smoke",
            channels: 2,
            per_channel: 2,
            limits: true,
            inject_429s: true,
        }]
    };
    println!("discord_throughput: fake Discord + echo LLM on 127.0.0.1, real core and adapter");
    println!(
        "{:<24} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}",
        "scenario", "messages", "seconds", "msg/s", "p50 ms", "p99 ms", "429s"
    );
    for scenario in scenarios {
        let outcome = run(&scenario).await;
        let total = (scenario.channels * scenario.per_channel) as usize;
        assert_eq!(
            outcome.answered, total,
            "{}: every message answered",
            scenario.name
        );
        println!(
            "{:<24} {:>8} {:>8.2} {:>8.1} {:>8.1} {:>8.1} {:>6}",
            scenario.name,
            outcome.answered,
            outcome.seconds,
            outcome.answered as f64 / outcome.seconds,
            percentile(&outcome.latencies_ms, 0.50),
            percentile(&outcome.latencies_ms, 0.99),
            outcome.rate_limited,
        );
    }
}

async fn run(scenario: &Scenario) -> Outcome {
    let discord = FakeDiscord::start().await;
    for c in 0..scenario.channels {
        discord.add_text_channel(FIRST_CHANNEL + c);
    }
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let asked = last_user_text(request).unwrap_or_default();
        let n = asked.split_whitespace().last().unwrap_or("?").to_owned();
        Reply::text(&format!("ok-{n}"))
    });
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
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
    let mut discord_config = DiscordConfig::new(Secret::new(TOKEN));
    discord_config.api_url = Some(discord.api_url.clone());
    if !scenario.limits {
        let lots = NonZeroU32::new(100_000).unwrap();
        discord_config.channel_quota = Quota::per_second(lots);
        discord_config.bot_quota = Quota::per_second(lots);
    }
    let adapter = Arc::new(
        DiscordAdapter::connect(discord_config)
            .await
            .expect("connect"),
    );
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![adapter.clone()];
    let running = switchboard::start(&config, adapters, shutdown.clone())
        .await
        .expect("start");
    assert!(discord.wait_ready(1).await, "shard ready");

    if scenario.inject_429s {
        for c in 0..scenario.channels.min(3) {
            discord.rate_limit_channel(FIRST_CHANNEL + c, 1, 1.0);
        }
        discord.rate_limit_global(1, 0.5);
    }
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
    let total = sent_at.len();
    let deadline = start + DEADLINE;
    let mut first_seen: HashMap<String, Instant> = HashMap::new();
    while first_seen.len() < total && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        for call in discord.calls() {
            if call.status >= 300 {
                continue;
            }
            if let Some(content) = call.body["content"].as_str() {
                if sent_at.contains_key(content) && !first_seen.contains_key(content) {
                    first_seen.insert(content.to_owned(), call.at);
                }
            }
        }
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
    let rate_limited = adapter.rate_limited_count();
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(20), running.wait()).await;
    Outcome {
        answered: first_seen.len(),
        seconds,
        latencies_ms,
        rate_limited,
    }
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
