//! Durable turns: approval round trip and schedule firing accuracy.
//!
//! `cargo bench --bench durable` (SQLite; also PostgreSQL when
//! `TEST_DATABASE_URL` is set, e.g. `postgres://postgres@127.0.0.1:5432/test`);
//! `cargo bench --bench durable -- approvals` (or `schedules`, `cards`) runs
//! one part.
//!
//! 1. Approval round trip, press → tool start: the real core with the in-memory
//!    test channel and the fake LLM on 127.0.0.1. Each round a fresh user asks,
//!    the model calls `exec_command` with `date +%s%N`, the card appears, the
//!    bench notes the wall clock and injects the Allow press. The command prints
//!    the wall clock at the moment the process runs, so press → tool start is
//!    read from the tool result the model receives: it covers authorization,
//!    the conditional update, queueing the resume, claiming the stored row
//!    and spawning the process. The press is made once the card's message is
//!    recorded, as a person's would be. Also: press → card updated (the
//!    press answered). Same process, and pressed in a second process on the
//!    same database (the turn is resumed there from its row).
//! 2. Schedule firing under load: 1,000 one-off schedules of 1,000 users, all
//!    due at the same instant, fired by one or two gateway processes on one
//!    database. Lateness of the claim (`last_fired_at` − due, from the database)
//!    and of the turn start (the scheduled turn's request reaching the fake LLM,
//!    − due); occurrences fired more than once (must be 0) or never (must be 0);
//!    time until the last answer reached its chat.
//! 3. The cost of open approval cards: one gateway process (SQLite), idle for
//!    20 s, then 1,000 users each get a card (their turns pause on it) and the
//!    process idles again for 20 s with all 1,000 open. Resident memory
//!    (`VmRSS`) and CPU time (`utime + stime`, 10 ms ticks) of this process
//!    (the gateway runs in it; the fake model keeps no requests, the test
//!    channel keeps its log of the 1,000 cards) in both idle windows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/stats.rs"]
mod stats;

#[path = "../tests/support"]
#[allow(dead_code)]
mod support {
    pub mod fake_llm;
    pub mod images;
    pub mod postgres;
    pub mod serve;
    pub mod test_channel;
}

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use stats::{ms, pct};
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use support::postgres::fresh_postgres;
use support::test_channel::{dm_chat, user, Log, TestChannel};
use switchboard::domain::{ApprovalId, ScheduleId};
use switchboard::store::{Conversation, ScheduleRecord, SessionKey};
use switchboard::Running;
use switchboard_platform::{ChatId, ChatKind, Platform, PlatformAdapter, UserId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const ROUNDS: i64 = 100;
const WARMUP: i64 = 10;
const SCHEDULES: i64 = 1_000;
const WAIT: Duration = Duration::from_secs(120);

#[tokio::main]
async fn main() {
    println!(
        "Switchboard durable-turns bench ({} CPUs)",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let mut databases = vec![(
        "SQLite",
        format!(
            "sqlite://{}",
            dir.path().join("sqlite/switchboard.db").display()
        ),
    )];
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        databases.push(("PostgreSQL", fresh_postgres(&admin).await));
    }

    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |part: &str| parts.is_empty() || parts.iter().any(|p| p == part);
    if run("approvals") {
        approvals(&databases, dir.path()).await;
    }
    if run("schedules") {
        schedules(&databases, dir.path()).await;
    }
    if run("cards") {
        println!();
        println!("3. {CARDS} open approval cards (SQLite, one process)");
        open_cards(dir.path()).await;
    }
}

async fn approvals(databases: &[(&str, String)], dir: &Path) {
    println!();
    println!("1. Approval round trip ({ROUNDS} rounds after {WARMUP} warm-up), ms");
    println!(
        "   {:<60} {:>8} {:>8} {:>8} {:>8}",
        "", "p50", "p90", "p99", "max"
    );
    for (name, url) in databases {
        approval_round_trip(name, url, dir, false).await;
        approval_round_trip(name, url, dir, true).await;
    }
}

async fn schedules(databases: &[(&str, String)], dir: &Path) {
    println!();
    println!("2. {SCHEDULES} schedules due at the same instant, lateness in ms");
    println!(
        "   {:<60} {:>8} {:>8} {:>8} {:>8}",
        "", "p50", "p90", "p99", "max"
    );
    for (name, url) in databases {
        let idle = fresh_database(name, url, dir, 0).await;
        spaced_schedules(name, &idle, dir).await;
        for processes in [1, 2] {
            let url = fresh_database(name, url, dir, processes).await;
            schedules_under_load(name, &url, dir, processes).await;
        }
    }
}

// ---------------------------------------------------------------------------
// 3. Open cards

const CARDS: i64 = 1_000;
const IDLE_WINDOW: Duration = Duration::from_secs(20);

/// This process's resident memory, in MB.
fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// CPU time this process has used (user + system), in ms.
fn cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat(5): 12 and 13 here.
    (ticks(11) + ticks(12)) * 10
}

/// Idle cost over `IDLE_WINDOW`: (RSS at its end in MB, CPU ms per second).
async fn idle_cost() -> (f64, f64) {
    let before = cpu_ms();
    tokio::time::sleep(IDLE_WINDOW).await;
    let used = cpu_ms().saturating_sub(before);
    (rss_mb(), used as f64 / IDLE_WINDOW.as_secs_f64())
}

async fn open_cards(dir: &Path) {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| {
        Reply::tool_calls(vec![(
            "call_wait",
            "exec_command",
            json!({ "command": "true" }),
        )])
    });
    // The fake shares this process: keeping 1,000 requests would be counted.
    llm.forget_requests();
    let url = format!("sqlite://{}", dir.join("cards/switchboard.db").display());
    let a = Instance::start(&llm, &url, dir).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_idle, cpu_idle) = idle_cost().await;
    for id in 0..CARDS {
        a.channel.dm(30_000 + id, "run it").await;
    }
    let cards = |l: &Log| {
        l.messages
            .values()
            .filter(|m| m.actions.iter().any(|a| a.starts_with("ap:")))
            .count() as i64
    };
    let shown = Instant::now();
    // In steps: each wait has the test channel's own limit.
    for step in 1..=10 {
        a.channel
            .wait_for("the cards", |l| cards(l) >= CARDS * step / 10)
            .await;
    }
    let opened = shown.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_open, cpu_open) = idle_cost().await;
    println!("   idle:                RSS {rss_idle:6.1} MB, CPU {cpu_idle:5.2} ms/s");
    println!(
        "   {CARDS} cards open:      RSS {rss_open:6.1} MB, CPU {cpu_open:5.2} ms/s (all shown {} ms after the first message)",
        opened.as_millis()
    );
    a.stop().await;
}

// ---------------------------------------------------------------------------
// 1. Approval round trip

/// The wall clock as nanoseconds since the epoch (what `date +%s%N` prints).
fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

async fn approval_round_trip(name: &str, url: &str, dir: &Path, across: bool) {
    let llm = FakeLlm::start().await;
    // Tool starts, as printed by the command (ns); rounds run one at a time.
    let (started_tx, mut started) = mpsc::unbounded_channel::<i128>();
    llm.set_responder(move |request| respond_probe(request, &started_tx));
    let a = Instance::start(&llm, url, dir).await;
    let b = if across {
        Some(Instance::start(&llm, url, dir).await)
    } else {
        None
    };
    let presser = b.as_ref().unwrap_or(&a);

    let base = if across { 20_000 } else { 10_000 };
    let mut to_tool = Vec::new();
    let mut to_answer = Vec::new();
    for round in 0..WARMUP + ROUNDS {
        let id = base + round;
        a.channel.dm(id, "run the probe").await;
        let card = a
            .channel
            .wait_for("a card", |l| card_in(l, id).is_some())
            .await;
        let action = card_in(&card, id).unwrap();
        // As a person would: pressed once the card is fully shown (its
        // message recorded). A press racing that one write waits for it, so
        // the press can be matched to the card.
        let approval: ApprovalId = action.split(':').nth(1).unwrap().parse().unwrap();
        while a
            .running
            .store
            .approvals()
            .get(&approval)
            .await
            .unwrap()
            .and_then(|r| r.card_message)
            .is_none()
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let answers_before = presser.channel.log().answers().len();
        let pressed = now_ns();
        let t0 = Instant::now();
        presser.channel.press(id, &action).await;
        presser
            .channel
            .wait_for("the press answer", |l| l.answers().len() > answers_before)
            .await;
        let answered = t0.elapsed();
        let ran_at = tokio::time::timeout(WAIT, started.recv())
            .await
            .expect("the tool ran")
            .expect("the fake LLM runs");
        // The answer comes from whichever process resumed the turn.
        let done = |l: &Log| l.texts_in(id).iter().any(|t| t == "probe done");
        tokio::select! {
            _ = a.channel.wait_for("the answer in A", done) => {}
            _ = presser.channel.wait_for("the answer in B", done) => {}
        }
        if round >= WARMUP {
            to_tool.push(Duration::from_nanos((ran_at - pressed).max(0) as u64));
            to_answer.push(answered);
        }
    }
    let place = if across {
        "pressed in another process"
    } else {
        "same process"
    };
    row(&format!("{name}, {place}: press → tool start"), &to_tool);
    row(
        &format!("{name}, {place}: press → card updated"),
        &to_answer,
    );
    a.stop().await;
    if let Some(b) = b {
        b.stop().await;
    }
}

/// The action id of the Allow-once button on the pending card in `user`'s DM.
fn card_in(log: &Log, user: i64) -> Option<String> {
    log.messages
        .values()
        .rev()
        .find(|m| m.chat.chat == ChatId(user) && m.actions.iter().any(|a| a.starts_with("ap:")))
        .and_then(|m| m.actions.iter().find(|a| a.ends_with(":y")).cloned())
}

fn respond_probe(request: &Value, started: &mpsc::UnboundedSender<i128>) -> Reply {
    match request["messages"].as_array().and_then(|m| m.last()) {
        Some(m) if m["role"] == "tool" => {
            let output = m["content"].as_str().unwrap_or_default();
            let ns = output
                .lines()
                .rev()
                .find_map(|l| l.trim().parse::<i128>().ok())
                .unwrap_or_else(|| panic!("no timestamp in tool output: {output}"));
            let _ = started.send(ns);
            Reply::text("probe done")
        }
        _ => Reply::tool_calls(vec![(
            "call_probe",
            "exec_command",
            json!({ "command": "date +%s%N" }),
        )]),
    }
}

// ---------------------------------------------------------------------------
// 2. Schedules

async fn fresh_database(name: &str, url: &str, dir: &Path, processes: usize) -> String {
    if name == "SQLite" {
        let path = dir.join(format!("sched-{processes}/switchboard.db"));
        return format!("sqlite://{}", path.display());
    }
    let admin = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| url.to_owned());
    fresh_postgres(&admin).await
}

/// Idle accuracy: 20 one-offs due 300 ms apart, one process.
async fn spaced_schedules(name: &str, url: &str, dir: &Path) {
    const N: i64 = 20;
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("ok"));
    let instance = Instance::start(&llm, url, dir).await;
    let first_due = chrono::Utc::now().timestamp_millis() + 1_000;
    let mut due = HashMap::new();
    for job in 0..N {
        let at = first_due + job * 300;
        let schedule = job_schedule(job, at);
        due.insert(schedule.id.clone(), at);
        instance
            .running
            .store
            .schedules()
            .insert(&schedule)
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1_000 + N as u64 * 300 + 1_000)).await;
    let fired = fired_times(url).await;
    assert_eq!(fired.len() as i64, N, "all fired");
    let claim: Vec<Duration> = fired
        .iter()
        .map(|(id, at, _)| late(*at, due[&id.parse::<ScheduleId>().unwrap()]))
        .collect();
    row(&format!("{name}, idle, 20 due 300 ms apart: claim"), &claim);
    instance.stop().await;
}

async fn schedules_under_load(name: &str, url: &str, dir: &Path, processes: usize) {
    let llm = FakeLlm::start().await;
    // When each scheduled turn's first request arrived: job number → ms.
    let arrivals: Arc<Mutex<HashMap<i64, Vec<i64>>>> = Arc::default();
    let seen = Arc::clone(&arrivals);
    llm.set_responder(move |request| {
        let text = last_user_text(request).unwrap_or_default();
        if let Some(job) = job_number(&text) {
            let at = chrono::Utc::now().timestamp_millis();
            lock(&seen).entry(job).or_default().push(at);
            return Reply::text(&format!("job {job} done"));
        }
        Reply::text("ok")
    });
    let mut instances = Vec::new();
    for _ in 0..processes {
        instances.push(Instance::start(&llm, url, dir).await);
    }
    let store = instances[0].running.store.clone();
    let due = chrono::Utc::now().timestamp_millis() + 5_000;
    for job in 0..SCHEDULES {
        store
            .schedules()
            .insert(&job_schedule(job, due))
            .await
            .unwrap();
    }
    let loaded = Instant::now();

    let deadline = Instant::now() + WAIT;
    while (lock(&arrivals).len() as i64) < SCHEDULES && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut delivered = 0;
    while Instant::now() < deadline {
        delivered = instances
            .iter()
            .map(|i| i.channel.log().count_containing(" done"))
            .sum::<usize>();
        if delivered as i64 >= SCHEDULES {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let all_answered = chrono::Utc::now().timestamp_millis() - due;
    // Let any duplicate firing show up before counting.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = loaded;

    let fired = fired_times(url).await;
    let claim: Vec<Duration> = fired.iter().map(|(_, at, _)| late(*at, due)).collect();
    let twice = fired.iter().filter(|(_, _, count)| *count > 1).count()
        + lock(&arrivals).values().filter(|v| v.len() > 1).count();
    let never = SCHEDULES as usize - lock(&arrivals).len();
    let start: Vec<Duration> = lock(&arrivals).values().map(|v| late(v[0], due)).collect();
    let label = format!(
        "{name}, {processes} process{}",
        if processes > 1 { "es" } else { "" }
    );
    row(&format!("{label}: claim"), &claim);
    row(&format!("{label}: turn start"), &start);
    println!(
        "   {label}: fired twice {twice}, never {never}, all {delivered} answers delivered {all_answered} ms after due"
    );
    for i in instances {
        i.stop().await;
    }
}

fn job_schedule(job: i64, due_ms: i64) -> ScheduleRecord {
    let id = 100_000 + job;
    let key = SessionKey {
        platform: Platform::Console,
        chat: ChatId(id),
        thread: None,
        user: UserId(id),
    };
    ScheduleRecord {
        id: format!("bench-{job:05}").parse().unwrap(),
        session_id: format!("bench-session-{job}").parse().unwrap(),
        origin: Conversation {
            key,
            chat: dm_chat(id),
            kind: ChatKind::Dm,
            user: user(id),
            reply_to: None,
        },
        kind: "at".into(),
        spec: chrono::DateTime::from_timestamp_millis(due_ms)
            .unwrap()
            .to_rfc3339(),
        timezone: "UTC".into(),
        prompt: format!("scheduled job #{job}"),
        missed: "run_once".into(),
        next_run_at: Some(due_ms),
        last_fired_at: None,
        fired_count: 0,
        active: true,
    }
}

fn job_number(text: &str) -> Option<i64> {
    let at = text.find("scheduled job #")?;
    text[at + 15..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// (id, last_fired_at, fired_count) of every fired bench schedule, read with plain SQL.
async fn fired_times(url: &str) -> Vec<(String, i64, i64)> {
    use sqlx::Row;
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let rows = sqlx::query(
        "SELECT id, last_fired_at, fired_count FROM schedules WHERE id LIKE 'bench-%' AND fired_count > 0",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows.iter()
        .map(|r| {
            (
                r.get::<String, _>(0),
                r.get::<i64, _>(1),
                r.get::<i64, _>(2),
            )
        })
        .collect()
}

fn late(at_ms: i64, due_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(at_ms - due_ms).unwrap_or(0))
}

// ---------------------------------------------------------------------------
// Harness

/// One gateway process: the real core with the test channel.
struct Instance {
    channel: Arc<TestChannel>,
    running: Running,
    shutdown: CancellationToken,
}

impl Instance {
    async fn start(llm: &FakeLlm, url: &str, dir: &Path) -> Instance {
        let data = dir.join("data");
        let vars: HashMap<&str, String> = [
            ("LLM_BASE_URL", llm.base_url()),
            ("LLM_MODEL", "fake-model".to_owned()),
            ("DATA_DIR", data.display().to_string()),
            ("DATABASE_URL", url.to_owned()),
            ("WORKSPACE_DIR", dir.join("ws").display().to_string()),
            ("ACCESS_POLICY", "open".to_owned()),
            ("USER_MESSAGES_PER_MINUTE", "1000000".to_owned()),
        ]
        .into_iter()
        .collect();
        let config = switchboard::Config::from_lookup(|k| vars.get(k).cloned()).expect("config");
        let channel = TestChannel::new();
        let shutdown = CancellationToken::new();
        let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![channel.clone()];
        let running = switchboard::start(&config, adapters, shutdown.clone())
            .await
            .expect("switchboard starts");
        Instance {
            channel,
            running,
            shutdown,
        }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.running.wait()).await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn row(name: &str, values: &[Duration]) {
    let mut sorted = values.to_vec();
    sorted.sort();
    println!(
        "   {:<60} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
        name,
        ms(pct(&sorted, 50.0)),
        ms(pct(&sorted, 90.0)),
        ms(pct(&sorted, 99.0)),
        ms(sorted.last().copied().unwrap_or_default()),
    );
}
