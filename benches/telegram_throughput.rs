//! Telegram throughput: N simulated users each ask M questions in turn (the next
//! after the previous answer is final) through the real gateway, the Telegram
//! adapter (default quotas) and the fake Bot API enforcing Telegram's published
//! limits the way Telegram counts them (sliding windows, no burst: 1 msg/s per
//! chat, 20/min per group, 30/s per bot). The fake LLM answers instantly,
//! so every millisecond measured is added by the gateway, the adapter's pacing
//! and the Bot API round trips.
//!
//! `cargo bench --bench telegram_throughput` (env: BENCH_USERS=40, BENCH_QUESTIONS=3).
//! Reports answers/s sustained, p50/p99 latency to the first visible reply and
//! to the final text, and the 429s received (target: zero).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use support::fake_llm::{last_user_text, FakeLlm, Reply, FAKE_MODEL};
use support::fake_telegram::{FakeOptions, FakeTelegram, FakeUser, PublishedLimits, Where, TOKEN};
use switchboard_platform::PlatformAdapter;
use switchboard_telegram::{TelegramAdapter, TelegramConfig};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(bench());
}

async fn bench() {
    let users = env_usize("BENCH_USERS", 40);
    let questions = env_usize("BENCH_QUESTIONS", 3);
    let llm = FakeLlm::start().await;
    llm.set_responder(|req| {
        let asked = last_user_text(req).unwrap_or_default();
        Reply::text(&format!("Answer to: {asked}"))
    });
    let tg = Arc::new(
        FakeTelegram::start_with(FakeOptions {
            enforce_limits: Some(PublishedLimits::default()),
            ..FakeOptions::default()
        })
        .await
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<i64> = (0..users).map(|u| 10_000 + u as i64).collect();
    let allowed = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    let vars: HashMap<&str, String> = HashMap::from([
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", FAKE_MODEL.to_owned()),
        ("DATA_DIR", dir.path().display().to_string()),
        ("ACCESS_POLICY", "allowlist".to_owned()),
        ("TELEGRAM_ALLOWED_USERS", allowed),
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()),
        ("TELEGRAM_API_URL", tg.api_url()),
        ("USER_MESSAGES_PER_MINUTE", "1000".to_owned()),
    ]);
    let lookup = |k: &str| vars.get(k).cloned();
    let config = switchboard::Config::from_lookup(lookup).unwrap();
    let tcfg = TelegramConfig::from_env(lookup, dir.path())
        .unwrap()
        .unwrap();
    let adapter = Arc::new(TelegramAdapter::connect(tcfg).await.unwrap());
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![adapter.clone()];
    let running = switchboard::start(&config, adapters, shutdown.clone())
        .await
        .unwrap();

    let start = Instant::now();
    let mut tasks = Vec::new();
    for &id in &ids {
        let tg = tg.clone();
        tasks.push(tokio::spawn(async move {
            let user = FakeUser::new(id, "User");
            let mut samples = Vec::new();
            for q in 0..questions {
                let question = format!("question {q} from user {id}, please answer briefly");
                let final_text = format!("Answer to: {question}");
                let pushed = tg.message(Where::Dm, &user, &question);
                let asked = Instant::now();
                let limit = Duration::from_secs(120);
                let id_ = pushed.message_id;
                let replied = tg
                    .wait_until(limit, |t| {
                        t.bot_messages(id).iter().any(|m| m.reply_to == Some(id_))
                    })
                    .await;
                let first = asked.elapsed();
                let done = tg
                    .wait_until(limit, |t| {
                        t.bot_messages(id)
                            .iter()
                            .any(|m| m.reply_to == Some(id_) && m.text == final_text)
                    })
                    .await;
                assert!(
                    replied && done,
                    "user {id} got no final answer to question {q}"
                );
                samples.push((first, asked.elapsed()));
            }
            samples
        }));
    }
    let mut firsts = Vec::new();
    let mut finals = Vec::new();
    for t in tasks {
        for (f, d) in t.await.unwrap() {
            firsts.push(f);
            finals.push(d);
        }
    }
    let elapsed = start.elapsed();
    firsts.sort();
    finals.sort();
    let answers = finals.len();
    let calls = tg.calls();
    let message_calls = calls
        .iter()
        .filter(|c| matches!(c.method.as_str(), "SendMessage" | "EditMessageText") && c.ok)
        .count();
    println!("telegram_throughput: {users} users x {questions} questions, fake LLM instant, fake Bot API enforcing 1/s per chat, 20/min per group, 30/s per bot");
    println!(
        "  answers:             {answers} in {:.2} s = {:.1} answers/s",
        elapsed.as_secs_f64(),
        answers as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  Bot API messages:    {message_calls} sends+edits = {:.1} msg/s",
        message_calls as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  first reply latency: p50 {:?}  p99 {:?}",
        percentile(&firsts, 0.50),
        percentile(&firsts, 0.99)
    );
    println!(
        "  final text latency:  p50 {:?}  p99 {:?}",
        percentile(&finals, 0.50),
        percentile(&finals, 0.99)
    );
    println!(
        "  429s received:       {} (fake answered {}; by limit {:?}; by method {:?})",
        adapter.rate_limited_count(),
        tg.rate_limited_responses(),
        tg.limit_hits(),
        calls.iter().filter(|c| c.error_code == Some(429)).fold(
            HashMap::<&str, usize>::new(),
            |mut m, c| {
                *m.entry(c.method.as_str()).or_default() += 1;
                m
            }
        )
    );
    shutdown.cancel();
    running.wait().await;
}
