//! Semantic recall latency on SQLite: one user with 100,000 memories, each
//! embedded (384 dimensions, as small local models such as bge-small or
//! all-MiniLM give) by the real worker through an OpenAI-compatible
//! embeddings server on 127.0.0.1 (in this process, answering at once with
//! hashed bag-of-words vectors).
//!
//! `cargo bench --bench semantic_recall`
//!
//! 1. The back-fill: 100,000 memories embedded in batches of 2,048.
//! 2. The user's index read into memory (first recall after a start), its size.
//! 3. `MemoryBook::recall` with embeddings (query embedding over loopback HTTP,
//!    word candidates, the in-memory nearest neighbours, the blend), p50/p99,
//!    beside word recall alone on the same rows; and the nearest-neighbour
//!    search alone.
//! 4. `query_my_chat_history`'s search by meaning in one conversation of
//!    20,000 embedded messages (its whole scan: every vector read from the
//!    database and compared).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use axum::routing::post;
use axum::{Json, Router};
use chrono::Utc;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use switchboard::llm::Message;
use switchboard::memory::semantic::{
    backfill, backfill_history, Embedder, MessageQuery, MessageScope, Query, UserIndex,
    HISTORY_SCANNED,
};
use switchboard::memory::{recall, terms, EmbeddingsConfig, MemoryBook, MemoryConfig};
use switchboard::store::{HistoryWindow, MemoryKind, MemoryOwner, NewMemory, SessionKey, Store};
use switchboard_platform::{ChatId, Platform, UserId};

const MEMORIES: usize = 100_000;
const DIM: usize = 384;
const QUERIES: usize = 1_000;
const WARMUP: usize = 50;
const MODEL: &str = "bench-embed-384";

const WORDS: &str = "coffee tea running swimming stocks bonds risk dividends value growth tech health retail \
banking insurance energy cars chips software hardware cloud data models algorithms rust python testing deploy \
monitoring logging alerts database cache queue api docs meetings weekly reports budget contracts customers \
suppliers logistics inventory pricing discounts travel hotels flights trains breakfast lunch dinner fitness sleep \
reading music movies photography painting writing translation english japanese french kids parents friends \
colleagues team project goals planning review summary habits preferences principles strategy stoploss position \
leverage volatility index sector valuation profit cash debt assets quarterly yearly conservative aggressive";

/// A hashed bag of words: each word a pseudo-random unit direction.
fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    for word in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for x in v.iter_mut() {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            *x += (h % 2001) as f32 / 1000.0 - 1.0;
        }
    }
    v
}

async fn embeddings(Json(body): Json<Value>) -> Json<Value> {
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": embed(t)}))
        .collect();
    Json(json!({"object": "list", "data": data, "model": MODEL}))
}

fn sentence(words: &[&str], rng: &mut StdRng) -> String {
    let mut pick = || {
        let u: f64 = rng.random();
        words[((u * u) * words.len() as f64) as usize % words.len()]
    };
    format!(
        "The user {} {} and {} for {} {}",
        ["prefers", "decided on", "avoids", "tracks", "likes"][(pick().len()) % 5],
        pick(),
        pick(),
        pick(),
        pick()
    )
}

fn line(label: &str, mut v: Vec<Duration>) {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3;
    println!(
        "  {label:<46} n={:<5} p50 {:>7.3} ms   p99 {:>7.3} ms   max {:>7.3} ms",
        v.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

#[tokio::main]
async fn main() {
    println!(
        "Switchboard semantic recall bench ({} CPUs)\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route("/v1/embeddings", post(embeddings));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("semantic.db").display());
    let store = Store::open(&url).await.unwrap();
    let owner = MemoryOwner::new(Platform::Console, UserId(9_000_000));
    let words: Vec<&str> = WORDS.split_whitespace().collect();
    let mut rng = StdRng::seed_from_u64(7);
    let started = Instant::now();
    for chunk in 0..MEMORIES / 2_000 {
        let batch: Vec<(NewMemory, Vec<String>)> = (0..2_000)
            .map(|j| {
                let content = sentence(&words, &mut rng);
                let t = terms(&content);
                let kind = [MemoryKind::Decision, MemoryKind::Fact, MemoryKind::Scenario][j % 3];
                let m = NewMemory {
                    kind,
                    content,
                    source_ref: "bench".into(),
                    importance: rng.random_range(0.2..0.9),
                    expires_at: None,
                };
                (m, t)
            })
            .collect();
        let at = Utc::now() - chrono::Duration::hours((chunk as i64 * 7) % (24 * 180));
        store
            .memories()
            .insert_many(owner, &batch, at)
            .await
            .unwrap();
    }
    println!(
        "dataset: {MEMORIES} memories of one user written in {:.1} s\n",
        started.elapsed().as_secs_f64()
    );

    let mut config = EmbeddingsConfig::new(&format!("http://{addr}/v1"), MODEL);
    config.batch = 2_048;
    config.query_timeout = Duration::from_millis(250);
    println!(
        "1. back-fill ({DIM} dimensions, batches of {})",
        config.batch
    );
    let embedder = Embedder::new(config.clone());
    let started = Instant::now();
    let done = backfill(&store, &embedder, &mut |_, _| {}).await.unwrap();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "  {} embedded in {secs:.1} s ({:.0} a second, the server answering at once)\n",
        done.settled,
        done.settled as f64 / secs
    );

    println!("2. the user's index read into memory");
    let book = MemoryBook::new(
        store.clone(),
        MemoryConfig {
            embeddings: Some(config),
            ..MemoryConfig::default()
        },
    );
    let semantic = book.semantic().unwrap();
    let started = Instant::now();
    semantic.warm(owner).await;
    let (users, bytes) = semantic.cached();
    println!(
        "  read in {:.2} s: {users} user, {:.1} MB ({} bytes a vector)\n",
        started.elapsed().as_secs_f64(),
        bytes as f64 / 1e6,
        UserIndex::bytes_per_vector(DIM)
    );

    println!("3. recall, one user with 100,000 memories (budget 800 tokens)");
    let (mut with, mut without, mut found) = (Vec::new(), Vec::new(), 0usize);
    for i in 0..WARMUP + QUERIES {
        let q = format!(
            "what about {} and {}?",
            words[rng.random_range(0..words.len())],
            words[rng.random_range(0..words.len())]
        );
        let started = Instant::now();
        let hits = book
            .recall(owner, &q, 800, Utc::now(), &|_| true)
            .await
            .unwrap();
        let semantic_time = started.elapsed();
        let started = Instant::now();
        recall(&store, owner, &q, 800, Utc::now()).await.unwrap();
        let words_time = started.elapsed();
        if i >= WARMUP {
            with.push(semantic_time);
            without.push(words_time);
            found += hits.len();
        }
    }
    line("with embeddings (query embedded over HTTP)", with);
    line("words only (EMBEDDINGS_* unset)", without);
    println!(
        "  {:<46} {:.1} recalled per query",
        "",
        found as f64 / QUERIES as f64
    );

    let mut index = UserIndex::default();
    let mut rng = StdRng::seed_from_u64(11);
    for id in 0..MEMORIES as i64 {
        index.upsert(id, &embed(&sentence(&words, &mut rng)), 0);
    }
    let mut search = Vec::new();
    for _ in 0..QUERIES {
        let q = Query::new(&embed(&sentence(&words, &mut rng))).unwrap();
        let started = Instant::now();
        std::hint::black_box(index.nearest(&q, 24));
        search.push(started.elapsed());
    }
    line("of which: the 24 nearest of 100,000 (in memory)", search);
    history_search(&store, &embedder, &words).await;
    store.close().await;
}

/// 4: one conversation of [`HISTORY_SCANNED`] messages, all embedded, and
/// the 200 nearest a query among them.
async fn history_search(store: &Store, embedder: &Embedder, words: &[&str]) {
    println!("\n4. chat-history search by meaning, one conversation of {HISTORY_SCANNED} messages");
    let key = SessionKey {
        platform: Platform::Console,
        chat: ChatId(1),
        thread: None,
        user: UserId(9_000_000),
    };
    let session = store.sessions().open(&key).await.unwrap();
    let mut rng = StdRng::seed_from_u64(13);
    for _ in 0..HISTORY_SCANNED / 1_000 {
        let batch: Vec<Message> = (0..1_000)
            .map(|i| {
                let text = sentence(words, &mut rng);
                if i % 2 == 0 {
                    Message::user(text)
                } else {
                    Message::assistant(text)
                }
            })
            .collect();
        store.history().append(&session, &batch).await.unwrap();
    }
    let started = Instant::now();
    let done = backfill_history(store, embedder, &mut |_, _| {})
        .await
        .unwrap();
    println!(
        "  {} embedded in {:.1} s",
        done.settled,
        started.elapsed().as_secs_f64()
    );
    let (mut times, mut kept) = (Vec::new(), 0usize);
    for i in 0..WARMUP / 5 + QUERIES / 10 {
        let q = format!(
            "what did we say about {}?",
            words[rng.random_range(0..words.len())]
        );
        let started = Instant::now();
        let query = MessageQuery::embed(embedder, &q).await.unwrap();
        let scope = MessageScope {
            session: &session,
            roles: ["user", "assistant"],
            window: HistoryWindow::default(),
            k: 200,
        };
        let found = query
            .nearest(store, scope, &Default::default())
            .await
            .unwrap();
        if i >= WARMUP / 5 {
            times.push(started.elapsed());
            kept += found.len();
        }
    }
    let n = times.len();
    line("the 200 nearest of 20,000 messages (read, compared)", times);
    println!(
        "  {:<46} {:.1} similar enough per query",
        "",
        kept as f64 / n as f64
    );
}
