//! Loading a session's recent history when compaction archived most of it:
//! a session of 200,000 messages of which all but the last 60 are archived,
//! and the per-turn query for the last 40 live messages
//! (`History::live`), on SQLite (and PostgreSQL when
//! `TEST_DATABASE_URL` is set). `cargo bench --bench history_load`.
//!
//! Before migration 0018 the query walked every archived row of the session
//! (measured 0.34 ms per 1,000 rows, 73 ms per turn at 200,000); the partial
//! index on live rows keeps it flat.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/stats.rs"]
mod stats;

use stats::{ms, pct};
use std::time::{Duration, Instant};
use switchboard::llm::Message;
use switchboard::store::{SessionKey, Store};
use switchboard_platform::{ChatId, Platform, UserId};

const MESSAGES: usize = 200_000;
const LIVE: usize = 60;
const RUNS: usize = 300;

/// `drop_index`: the command that drops the partial index, run when
/// `BENCH_WITHOUT_INDEX=1` (for the before/after comparison).
async fn measure(label: &str, store: Store, drop_index: &[&str]) {
    let key = SessionKey {
        platform: Platform::Telegram,
        chat: ChatId(1),
        thread: None,
        user: UserId(1),
    };
    let session = store.sessions().open(&key).await.unwrap();
    let started = Instant::now();
    let batch: Vec<Message> = (0..1_000)
        .map(|i| {
            Message::user(format!(
                "message {i} of a long conversation about the weather"
            ))
        })
        .collect();
    for _ in 0..MESSAGES / batch.len() {
        store.history().append(&session, &batch).await.unwrap();
    }
    // Compaction archives all but the last LIVE messages.
    store
        .history()
        .fold(&session, None, MESSAGES, MESSAGES - LIVE, "summary")
        .await
        .unwrap();
    println!(
        "{label}: {MESSAGES} messages written and archived in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let label = if std::env::var("BENCH_WITHOUT_INDEX").as_deref() == Ok("1") {
        let ok = std::process::Command::new(drop_index[0])
            .args(&drop_index[1..])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not drop the index: {drop_index:?}");
        format!("{label} (without messages_live)")
    } else {
        label.to_owned()
    };
    let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let live = store.history().live(&session, 40).await.unwrap();
        times.push(t.elapsed());
        assert_eq!(live.len(), 40);
    }
    times.sort();
    println!(
        "{label}: live history of 40 at {MESSAGES} rows: p50 {:.3} ms, p99 {:.3} ms",
        ms(pct(&times, 50.0)),
        ms(pct(&times, 99.0))
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.db");
    let url = format!("sqlite://{}", file.display());
    let file = file.display().to_string();
    measure(
        "sqlite",
        Store::open(&url).await.unwrap(),
        &["sqlite3", &file, "DROP INDEX messages_live"],
    )
    .await;
    if let Ok(pg) = std::env::var("TEST_DATABASE_URL") {
        // A database of its own, dropped first (the bench owns it).
        let name = "sb_bench_history";
        let admin = Store::open(&pg).await.unwrap();
        admin.close().await;
        let base = pg
            .rsplit_once('/')
            .map_or(pg.clone(), |(b, _)| b.to_owned());
        let status = std::process::Command::new("psql")
            .args([
                pg.as_str(),
                "-qc",
                &format!("DROP DATABASE IF EXISTS {name}"),
                "-qc",
                &format!("CREATE DATABASE {name}"),
            ])
            .status();
        if status.is_ok_and(|s| s.success()) {
            let url = format!("{base}/{name}");
            measure(
                "postgres",
                Store::open(&url).await.unwrap(),
                &["psql", &url, "-qc", "DROP INDEX messages_live"],
            )
            .await;
        } else {
            println!("postgres: skipped (psql could not create {name})");
        }
    }
}
