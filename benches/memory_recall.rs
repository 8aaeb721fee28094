//! Memory recall latency and compaction cost on SQLite.
//!
//! `cargo bench --bench memory_recall`
//!
//! One temp database holds 1,100,000 synthetic memories (Chinese and English
//! sentences over a skewed vocabulary, some with stock-like codes, dates spread
//! over 180 days): one user with 100,000 and 1,000 users with 1,000 each. Then:
//! 1. `memory::recall` (full text + codes + substring fallback + pinned + the
//!    access update) for the 100K user and for random users of the 1,000, p50/p99.
//! 2. The alternative the term index replaced, on the 100K user's rows: SQLite's
//!    `trigram` tokenizer, which cannot serve two-character queries (a `LIKE`
//!    scan is needed for those).
//! 3. Compaction of a 200-message session (51K estimated tokens, 64K window):
//!    cut point, tool results reduced, transcript, summary parsed (an in-process
//!    model answers at once), folding persisted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;
use futures::stream;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use sqlx::Row;
use switchboard::agent::{compaction_point, summarize_head};
use switchboard::llm::{
    ChatRequest, Chunk, ChunkStream, Message, ModelInfo, Provider, ProviderError, ToolCall,
};
use switchboard::memory::{recall, record_access, terms};
use switchboard::store::{MemoryKind, MemoryOwner, NewMemory, SessionKey, Store};
use switchboard_platform::{ChatId, Platform, UserId};

const BIG_USER: i64 = 9_000_000;
const BIG_USER_MEMORIES: usize = 100_000;
const USERS: i64 = 1_000;
const MEMORIES_PER_USER: usize = 1_000;
const QUERIES: usize = 1_000;
const WARMUP: usize = 50;
const BATCH: usize = 2_000;

const ZH: &str = "咖啡 茶叶 跑步 游泳 股票 基金 债券 风险 收益 分红 价值 成长 科技 医药 消费 银行 保险 地产 能源 汽车 \
芯片 软件 硬件 云端 数据 模型 算法 编程 测试 部署 监控 日志 告警 数据库 缓存 队列 接口 文档 会议 周报 月报 预算 \
合同 客户 供应 物流 库存 价格 折扣 旅行 酒店 机票 火车 地铁 早餐 午餐 晚餐 健身 睡眠 阅读 音乐 电影 摄影 绘画 \
写作 翻译 英语 日语 法语 孩子 父母 朋友 同事 老板 团队 项目 目标 计划 复盘 总结 习惯 偏好 原则 策略 止损 仓位 \
杠杆 波动 指数 行业 估值 利润 现金 负债 资产 报表 季度 年度 长期 短期 稳健 激进 保守 分散 集中 定投 网格 趋势";
const EN: &str = "coffee tea running swimming stocks bonds risk dividends value growth tech health retail banking \
insurance energy cars chips software hardware cloud data models algorithms rust python testing deploy monitoring \
logging alerts database cache queue api docs meetings weekly reports budget contracts customers suppliers logistics \
inventory pricing discounts travel hotels flights trains breakfast lunch dinner fitness sleep reading music movies \
photography painting writing translation english japanese french kids parents friends colleagues team project goals \
planning review summary habits preferences principles strategy stoploss position leverage volatility index sector \
valuation profit cash debt assets quarterly yearly longterm shortterm conservative aggressive diversified focused";

struct Vocab {
    zh: Vec<&'static str>,
    en: Vec<&'static str>,
}

impl Vocab {
    fn new() -> Vocab {
        Vocab {
            zh: ZH.split_whitespace().collect(),
            en: EN.split_whitespace().collect(),
        }
    }

    /// A word, skewed toward the first ones (a few words are very common).
    fn pick<'a>(list: &'a [&'static str], rng: &mut StdRng) -> &'a str {
        let u: f64 = rng.random();
        list[((u * u) * list.len() as f64) as usize % list.len()]
    }

    fn zh(&self, rng: &mut StdRng) -> &str {
        Vocab::pick(&self.zh, rng)
    }

    fn en(&self, rng: &mut StdRng) -> &str {
        Vocab::pick(&self.en, rng)
    }

    fn code(rng: &mut StdRng) -> String {
        format!("{:06}", rng.random_range(0..5_000) * 113 % 1_000_000)
    }

    fn sentence(&self, rng: &mut StdRng) -> String {
        match rng.random_range(0..10) {
            0..=4 => format!(
                "用户{}{}和{}，因为{}{}更{}",
                ["偏好", "决定", "习惯", "关注", "避免"][rng.random_range(0..5)],
                self.zh(rng),
                self.zh(rng),
                self.zh(rng),
                self.zh(rng),
                self.zh(rng)
            ),
            5..=7 => format!(
                "The user {} {} and {} for {} {}",
                ["prefers", "decided on", "avoids", "tracks", "likes"][rng.random_range(0..5)],
                self.en(rng),
                self.en(rng),
                self.en(rng),
                self.en(rng)
            ),
            _ => format!(
                "用户关注 {} 的{}与{}",
                Vocab::code(rng),
                self.zh(rng),
                self.zh(rng)
            ),
        }
    }

    fn query(&self, rng: &mut StdRng) -> String {
        match rng.random_range(0..10) {
            0..=2 => self.zh(rng).to_owned(),
            3..=5 => format!(
                "我想了解一下{}和{}的情况，有什么建议？",
                self.zh(rng),
                self.zh(rng)
            ),
            6..=7 => format!(
                "what do you think about {} and {}?",
                self.en(rng),
                self.en(rng)
            ),
            8 => format!("看看 {} 怎么样", Vocab::code(rng)),
            _ => self
                .zh(rng)
                .chars()
                .next()
                .map(String::from)
                .unwrap_or_default(),
        }
    }
}

fn owner(user: i64) -> MemoryOwner {
    MemoryOwner::new(Platform::Console, UserId(user))
}

fn kind_for(i: usize) -> MemoryKind {
    match i {
        0..=4 => MemoryKind::Persona,
        5..=54 => MemoryKind::Preference,
        _ => [MemoryKind::Decision, MemoryKind::Fact, MemoryKind::Scenario][i % 3],
    }
}

async fn fill(store: &Store, user: i64, count: usize, vocab: &Vocab, rng: &mut StdRng) {
    let mut i = 0;
    while i < count {
        let n = BATCH.min(count - i);
        let batch: Vec<(NewMemory, Vec<String>)> = (i..i + n)
            .map(|j| {
                let content = vocab.sentence(rng);
                let t = terms(&content);
                let m = NewMemory {
                    kind: kind_for(j),
                    content,
                    source_ref: "bench".into(),
                    importance: rng.random_range(0.2..0.9),
                    expires_at: None,
                };
                (m, t)
            })
            .collect();
        let at = Utc::now() - chrono::Duration::hours(rng.random_range(0..24 * 180));
        store
            .memories()
            .insert_many(owner(user), &batch, at)
            .await
            .unwrap();
        i += n;
    }
}

struct Stats(Vec<Duration>);

impl Stats {
    fn pct(&self, p: f64) -> Duration {
        let mut v = self.0.clone();
        v.sort();
        v[((v.len() as f64 - 1.0) * p).round() as usize]
    }

    fn line(&self, label: &str) {
        let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
        println!(
            "  {label:<44} n={:<5} p50 {:>7.3} ms   p99 {:>7.3} ms   max {:>7.3} ms",
            self.0.len(),
            ms(self.pct(0.5)),
            ms(self.pct(0.99)),
            ms(self.pct(1.0))
        );
    }
}

async fn time_recall(
    store: &Store,
    users: impl Fn(&mut StdRng) -> i64,
    vocab: &Vocab,
    rng: &mut StdRng,
) -> (Stats, Stats, f64) {
    let (mut times, mut touches) = (Vec::with_capacity(QUERIES), Vec::with_capacity(QUERIES));
    let mut found = 0usize;
    for i in 0..WARMUP + QUERIES {
        let user = users(rng);
        let q = vocab.query(rng);
        let started = Instant::now();
        let hits = recall(store, owner(user), &q, 800, Utc::now())
            .await
            .unwrap();
        let elapsed = started.elapsed();
        // The access update runs on its own task in the gateway, after the reply started.
        let started = Instant::now();
        record_access(store, owner(user), &hits, Utc::now())
            .await
            .unwrap();
        let touched = started.elapsed();
        if i >= WARMUP {
            times.push(elapsed);
            touches.push(touched);
            found += hits.iter().filter(|h| !h.pinned).count();
        }
    }
    (Stats(times), Stats(touches), found as f64 / QUERIES as f64)
}

#[tokio::main]
async fn main() {
    println!(
        "Switchboard memory bench ({} CPUs)\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    // MEMORY_BENCH_DB=path keeps the dataset between runs (built when missing).
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::var("MEMORY_BENCH_DB")
        .map_or_else(|_| dir.path().join("memory.db"), std::path::PathBuf::from);
    let reuse = path.exists();
    let url = format!("sqlite://{}", path.display());
    let store = Store::open(&url).await.unwrap();
    let vocab = Vocab::new();
    let mut rng = StdRng::seed_from_u64(7);

    let started = Instant::now();
    if !reuse {
        fill(&store, BIG_USER, BIG_USER_MEMORIES, &vocab, &mut rng).await;
        for user in 1..=USERS {
            fill(&store, user, MEMORIES_PER_USER, &vocab, &mut rng).await;
        }
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(path.with_extension("db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "dataset: {} memories ({} + {} x {}) built in {:.1} s, {:.0} MB on disk\n",
        BIG_USER_MEMORIES + USERS as usize * MEMORIES_PER_USER,
        BIG_USER_MEMORIES,
        USERS,
        MEMORIES_PER_USER,
        started.elapsed().as_secs_f64(),
        size as f64 / 1e6
    );

    println!("1. recall (bigram term index, mixed ranking, budget 800 tokens)");
    let (big, touch, per) = time_recall(&store, |_| BIG_USER, &vocab, &mut rng).await;
    big.line("one user with 100,000 memories");
    touch.line("  then the access update (off the reply path)");
    println!("  {:<44} {per:.1} recalled (non-pinned) per query", "");
    let (many, touch, per) =
        time_recall(&store, |r| r.random_range(1..=USERS), &vocab, &mut rng).await;
    many.line("1,000 users x 1,000 memories (random user)");
    touch.line("  then the access update (off the reply path)");
    println!("  {:<44} {per:.1} recalled (non-pinned) per query", "");

    breakdown(&store, &vocab, &mut rng).await;
    println!("\n2. the trigram alternative, on the 100K user's rows");
    trigram_comparison(&url, &vocab, &mut rng).await;

    println!("\n3. compaction of a 200-message session (64K window)");
    compaction(&store).await;
    store.close().await;
}

/// Where a recall of the 100K user spends its time.
async fn breakdown(store: &Store, vocab: &Vocab, rng: &mut StdRng) {
    let (mut fts, mut like, mut pinned) = (Vec::new(), Vec::new(), Vec::new());
    let o = owner(BIG_USER);
    for _ in 0..200 {
        let q = vocab.query(rng);
        let t = switchboard::memory::query_terms(&q);
        let started = Instant::now();
        store
            .memories()
            .search(o, &t, None, 120, Utc::now())
            .await
            .unwrap();
        fts.push(started.elapsed());
        let started = Instant::now();
        store
            .memories()
            .containing(o, "猫", 10, Utc::now())
            .await
            .unwrap();
        like.push(started.elapsed());
        let started = Instant::now();
        store
            .memories()
            .of(
                o,
                &[MemoryKind::Persona, MemoryKind::Preference],
                60,
                Utc::now(),
            )
            .await
            .unwrap();
        pinned.push(started.elapsed());
    }
    Stats(fts).line("100K user, of which: full-text candidates (120)");
    Stats(like).line("  substring fallback (500 newest rows)");
    Stats(pinned).line("  persona and preferences");
}

async fn trigram_comparison(url: &str, vocab: &Vocab, rng: &mut StdRng) {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    let started = Instant::now();
    sqlx::query("DROP TABLE IF EXISTS tri")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("CREATE VIRTUAL TABLE tri USING fts5 (content, tokenize = 'trigram')")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO tri (rowid, content) SELECT id, content FROM memories WHERE user_id = $1",
    )
    .bind(BIG_USER)
    .execute(&pool)
    .await
    .unwrap();
    println!(
        "  trigram index of 100,000 rows built in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (mut like, mut tri, mut miss) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..200 {
        let word = vocab.zh(rng).to_owned();
        // A two-character word nobody wrote: the scan reads every row of the user.
        let absent = ["鲸鱼", "琵琶", "篆刻", "刺绣"][i % 4];
        let started = Instant::now();
        sqlx::query("SELECT id FROM memories WHERE platform = 'console' AND user_id = $1 AND content LIKE $2 ORDER BY updated_at DESC LIMIT 40")
            .bind(BIG_USER)
            .bind(format!("%{absent}%"))
            .fetch_all(&pool)
            .await
            .unwrap();
        miss.push(started.elapsed());
        let started = Instant::now();
        let rows = sqlx::query(
            "SELECT id FROM memories WHERE platform = 'console' AND user_id = $1 AND content LIKE $2 ORDER BY updated_at DESC LIMIT 40",
        )
        .bind(BIG_USER)
        .bind(format!("%{word}%"))
        .fetch_all(&pool)
        .await
        .unwrap();
        like.push(started.elapsed());
        let phrase = format!("{word}和");
        let started = Instant::now();
        let hits = sqlx::query("SELECT rowid FROM tri WHERE tri MATCH $1 ORDER BY rank LIMIT 40")
            .bind(format!("\"{phrase}\""))
            .fetch_all(&pool)
            .await
            .unwrap();
        tri.push(started.elapsed());
        let _ = (
            rows.len(),
            hits.iter().map(|r| r.get::<i64, _>(0)).sum::<i64>(),
        );
    }
    Stats(like).line("2-char query: LIKE scan (trigram can't)");
    Stats(miss).line("2-char query, no match: LIKE scans all rows");
    Stats(tri).line("3-char query: trigram MATCH");
    pool.close().await;
}

/// A model that answers every request at once with a fixed summary.
struct InstantModel(ModelInfo);

#[async_trait]
impl Provider for InstantModel {
    fn model(&self) -> &ModelInfo {
        &self.0
    }

    async fn chat_stream(&self, _request: ChatRequest) -> Result<ChunkStream, ProviderError> {
        let reply = json!({
            "summary": "The user reviewed fifty reports of the pipeline; totals were reconciled; the chart library is still open.",
            "task_state": {"current_goal": "Ship the reporting pipeline", "open_loops": ["pick a chart library"],
                           "important_facts": ["Reports go to finance"], "last_decision": "Use PostgreSQL"}
        });
        Ok(Box::pin(stream::iter([Ok(Chunk::Text(reply.to_string()))])))
    }
}

fn session_messages() -> Vec<Message> {
    let mut out = Vec::with_capacity(200);
    for i in 0..50 {
        out.push(Message::user(format!(
            "第{i}份报告：请检查收入、成本和利润的季度变化，并说明异常。{}",
            "please check the numbers ".repeat(8)
        )));
        let mut call = Message::assistant("");
        call.tool_calls.push(ToolCall {
            id: format!("c{i}"),
            name: "read_file".into(),
            arguments: json!({"path": format!("r{i}.json")}).to_string(),
        });
        out.push(call);
        let rows: Vec<_> = (0..60)
            .map(|r| json!({"row": r, "revenue": 1000 + r, "cost": 700 + r, "note": "ok"}))
            .collect();
        out.push(Message::tool_result(
            format!("c{i}"),
            json!({"status": "ok", "name": format!("report {i}"), "rows": rows}).to_string(),
        ));
        out.push(Message::assistant(format!(
            "报告{i}：收入稳定，成本略升。{}",
            "Margins are within the expected range. ".repeat(6)
        )));
    }
    out
}

async fn compaction(store: &Store) {
    let messages = session_messages();
    let model = InstantModel(ModelInfo::new("bench-model", Some(64_000)));
    let tokens: usize = messages
        .iter()
        .map(switchboard::llm::estimate_message_tokens)
        .sum();
    let key = SessionKey {
        platform: Platform::Console,
        chat: ChatId(1),
        thread: None,
        user: UserId(1),
    };
    let session = store.sessions().open(&key).await.unwrap();
    store.history().append(&session, &messages).await.unwrap();
    let (mut plan, mut fold, mut persist) = (Vec::new(), Vec::new(), Vec::new());
    let mut kept = 0;
    for _ in 0..100 {
        let started = Instant::now();
        let start = compaction_point(64_000, 2_000, &messages, 0).expect("compaction is due");
        plan.push(started.elapsed());
        let started = Instant::now();
        let folded = summarize_head(&model, &messages[..start]).await;
        fold.push(started.elapsed());
        let started = Instant::now();
        store
            .history()
            .fold(&session, None, messages.len(), start, &folded.summary)
            .await
            .unwrap();
        persist.push(started.elapsed());
        kept = messages.len() - start;
    }
    println!(
        "  {} messages, ~{tokens} estimated tokens; tail kept: {kept} messages",
        messages.len()
    );
    Stats(plan).line("estimate + tail cut");
    Stats(fold).line("tool results reduced + transcript + summary");
    Stats(persist).line("archive the head + store the summary");
}
