//! Telegram throughput through the real gateway, the Telegram adapter (default
//! quotas) and the fake Bot API enforcing Telegram's published limits the way
//! Telegram counts them (sliding windows, no burst: 1 msg/s per chat, 20/min
//! per group, 30/s per bot). The fake LLM answers instantly, so every
//! millisecond measured is added by the gateway, the adapter's pacing and the
//! Bot API round trips. Two scenarios, each user asking the next question once
//! the previous answer is final:
//! - direct messages: N users, each in their own chat;
//! - groups: G groups of K members, all asking at once with an @mention, so
//!   the group's 20 messages/minute is the bottleneck.
//!
//! `cargo bench --bench telegram_throughput` (env: BENCH_USERS=40,
//! BENCH_QUESTIONS=3, BENCH_GROUPS=3, BENCH_GROUP_MEMBERS=4; BENCH_TOOLS=1
//! makes every answer a tool round, shown with activity lines at
//! CHAT_VERBOSITY, default tools; BENCH_CARDS=N first leaves N approval cards
//! open, one per extra user, before the scenarios; BENCH_STREAM_MS=M streams
//! every answer word by word, M ms a word, with BENCH_STREAM_WORDS=N words
//! (default 40) before the question it repeats, so answers are shown while
//! they stream; TELEGRAM_DRAFTS as in the gateway). Reports answers/s
//! sustained and as a fraction of the bot-wide ceiling, p50/p99 latency to the
//! first visible reply (a message, or a draft in a private chat) and to the
//! final text, the message calls (sends and edits), the draft calls and all
//! Bot API calls per answer, the typing share of those calls and the 429s
//! received (target: zero).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "common/cards.rs"]
mod cards;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use support::fake_llm::{last_user_text, FakeLlm, Reply, FAKE_MODEL};
use support::fake_telegram::{
    FakeOptions, FakeTelegram, FakeUser, PublishedLimits, Where, BOT_USERNAME, TOKEN,
};
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

/// One simulated user: who asks, where, and how the bot is addressed there.
#[derive(Clone, Copy)]
struct Asker {
    user: i64,
    at: Where,
    chat: i64,
    mention: &'static str,
}

/// What one scenario measured.
struct Measured {
    answers: usize,
    elapsed: Duration,
    firsts: Vec<Duration>,
    finals: Vec<Duration>,
    /// Successful sendMessage + editMessageText calls.
    message_calls: usize,
    /// Successful sendMessageDraft calls.
    draft_calls: usize,
    /// Every Bot API call, and the sendChatAction ones among them.
    all_calls: usize,
    typing_calls: usize,
    /// 429s the adapter received / the fake answered.
    adapter_429s: u64,
    fake_429s: usize,
}

impl Measured {
    fn print(&self, what: &str) {
        let secs = self.elapsed.as_secs_f64();
        println!("  {what}");
        println!(
            "    answers:             {} in {secs:.2} s = {:.1} answers/s",
            self.answers,
            self.answers as f64 / secs
        );
        println!(
            "    Bot API messages:    {} sends+edits = {:.1} msg/s, {:.2} per answer",
            self.message_calls,
            self.message_calls as f64 / secs,
            self.message_calls as f64 / self.answers.max(1) as f64
        );
        println!(
            "    Bot API drafts:      {} sendMessageDraft = {:.2} per answer",
            self.draft_calls,
            self.draft_calls as f64 / self.answers.max(1) as f64
        );
        // The default bot quota: 30 per 1 s within a 50 ms margin.
        let period = switchboard_platform::Pacer::quota_within(
            30,
            Duration::from_secs(1),
            1,
            Duration::from_millis(50),
        )
        .replenish_interval();
        let ceiling = 1.0 / period.as_secs_f64();
        println!(
            "    of the ceiling:      {:.0} % (30 per 1 s bot-wide with a 50 ms margin = {ceiling:.1}/s)",
            self.answers as f64 / secs / ceiling * 100.0
        );
        println!(
            "    Bot API calls:       {:.2} per answer, typing {} of {} = {:.1} %",
            self.all_calls as f64 / self.answers.max(1) as f64,
            self.typing_calls,
            self.all_calls,
            self.typing_calls as f64 * 100.0 / self.all_calls.max(1) as f64
        );
        println!(
            "    first reply latency: p50 {:?}  p99 {:?}",
            percentile(&self.firsts, 0.50),
            percentile(&self.firsts, 0.99)
        );
        println!(
            "    final text latency:  p50 {:?}  p99 {:?}",
            percentile(&self.finals, 0.50),
            percentile(&self.finals, 0.99)
        );
        println!(
            "    429s received:       {} (fake answered {})",
            self.adapter_429s, self.fake_429s
        );
    }
}

/// Every asker asks `questions` questions in turn; measures until all are answered.
async fn scenario(
    tg: &Arc<FakeTelegram>,
    adapter: &TelegramAdapter,
    askers: Vec<Asker>,
    questions: usize,
) -> Measured {
    let calls_before = tg.calls().len();
    let adapter_before = adapter.rate_limited_count();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for asker in askers {
        let tg = tg.clone();
        tasks.push(tokio::spawn(async move {
            let user = FakeUser::new(asker.user, "User");
            let mut samples = Vec::new();
            for q in 0..questions {
                let question = format!(
                    "question {q} from user {}, please answer briefly",
                    asker.user
                );
                let text = format!("{}{question}", asker.mention);
                let since = tg.calls().len();
                let pushed = tg.message(asker.at, &user, &text);
                let asked = Instant::now();
                let limit = Duration::from_secs(300);
                let id_ = pushed.message_id;
                let replied = tg
                    .wait_until(limit, |t| {
                        let drafted = t.calls_since(since).0.iter().any(|c| {
                            c.method == "SendMessageDraft"
                                && c.ok
                                && c.params["chat_id"] == asker.chat
                        });
                        drafted
                            || t.bot_messages(asker.chat)
                                .iter()
                                .any(|m| m.reply_to == Some(id_))
                    })
                    .await;
                let first = asked.elapsed();
                let done = tg
                    .wait_until(limit, |t| {
                        t.bot_messages(asker.chat).iter().any(|m| {
                            m.reply_to == Some(id_)
                                && m.text.contains("Answer to:")
                                && m.text.ends_with(&question)
                        })
                    })
                    .await;
                assert!(
                    replied && done,
                    "user {} got no final answer to question {q}",
                    asker.user
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
    let calls = tg.calls();
    let calls = &calls[calls_before..];
    // getUpdates is the bot polling, not a call made for an answer.
    let outbound = calls.iter().filter(|c| c.method != "GetUpdates");
    Measured {
        all_calls: outbound.clone().count(),
        typing_calls: outbound.filter(|c| c.method == "SendChatAction").count(),
        answers: finals.len(),
        elapsed,
        firsts,
        finals,
        message_calls: calls
            .iter()
            .filter(|c| matches!(c.method.as_str(), "SendMessage" | "EditMessageText") && c.ok)
            .count(),
        draft_calls: calls
            .iter()
            .filter(|c| c.method == "SendMessageDraft" && c.ok)
            .count(),
        adapter_429s: adapter.rate_limited_count() - adapter_before,
        fake_429s: calls.iter().filter(|c| c.error_code == Some(429)).count(),
    }
}

async fn bench() {
    let users = env_usize("BENCH_USERS", 40);
    let questions = env_usize("BENCH_QUESTIONS", 3);
    let groups = env_usize("BENCH_GROUPS", 3);
    let members = env_usize("BENCH_GROUP_MEMBERS", 4);
    let llm = FakeLlm::start().await;
    let tools = env_usize("BENCH_TOOLS", 0) == 1;
    let cards = cards::wanted();
    let stream_ms = env_usize("BENCH_STREAM_MS", 0) as u64;
    let filler = "word ".repeat(env_usize("BENCH_STREAM_WORDS", 40));
    llm.set_responder(move |req| {
        let asked = last_user_text(req).unwrap_or_default();
        if let Some(card) = cards::model_reply(&asked) {
            return card;
        }
        let after_tool = support::e2e::messages(req)
            .last()
            .is_some_and(|m| m["role"] == "tool");
        if tools && !after_tool {
            let path = serde_json::json!({"path": "notes.txt"});
            return Reply::tool_calls([("call_1", "read_file", path)]);
        }
        if stream_ms > 0 {
            return Reply::text(&format!("Answer to: {filler}{asked}"))
                .with_chunk_delay(Duration::from_millis(stream_ms));
        }
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
    let ids: Vec<i64> = (0..users + groups * members + cards)
        .map(|u| 10_000 + u as i64)
        .collect();
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
        (
            "CHAT_VERBOSITY",
            std::env::var("CHAT_VERBOSITY").unwrap_or_else(|_| "tools".into()),
        ),
        (
            "TELEGRAM_DRAFTS",
            std::env::var("TELEGRAM_DRAFTS").unwrap_or_else(|_| "on".into()),
        ),
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

    println!("telegram_throughput: fake LLM instant, fake Bot API enforcing 1/s per chat, 20/min per group, 30/s per bot");
    if cards > 0 {
        open_cards(&tg, &ids[users + groups * members..]).await;
    }
    let dms = ids[..users]
        .iter()
        .map(|&id| Asker {
            user: id,
            at: Where::Dm,
            chat: id,
            mention: "",
        })
        .collect();
    scenario(&tg, &adapter, dms, questions)
        .await
        .print(&format!(
            "direct messages: {users} users x {questions} questions"
        ));

    if groups == 0 {
        shutdown.cancel();
        running.wait().await;
        return;
    }
    let mention: &'static str = format!("@{BOT_USERNAME} ").leak();
    let grouped = (0..groups)
        .flat_map(|g| {
            let chat = -1_000_000_000_000 - g as i64;
            ids[users + g * members..users + (g + 1) * members]
                .iter()
                .map(move |&id| Asker {
                    user: id,
                    at: Where::Group(chat),
                    chat,
                    mention,
                })
        })
        .collect();
    scenario(&tg, &adapter, grouped, questions).await.print(&format!(
        "groups: {groups} groups x {members} members x {questions} questions, all at once, each mentioning the bot"
    ));
    println!("  fake limits hit overall: {:?}", tg.limit_hits());
    shutdown.cancel();
    running.wait().await;
}

/// Each of `users` asks for something that needs approval; returns once every
/// card is shown (the turns paused, waiting).
async fn open_cards(tg: &Arc<FakeTelegram>, users: &[i64]) {
    let start = Instant::now();
    for &id in users {
        tg.message(Where::Dm, &FakeUser::new(id, "Carded"), cards::OPEN_A_CARD);
    }
    cards::wait_shown(users.len(), start, |i| {
        tg.bot_messages(users[i])
            .iter()
            .any(|m| m.reply_markup.is_some())
    })
    .await;
}
