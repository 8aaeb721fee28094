//! Gateway overhead per turn and idle RSS of `switchboard chat`.
//!
//! `cargo build --release --bin switchboard && cargo bench --bench turn_overhead`
//!
//! 1. Overhead per turn: the real core (`switchboard::start`: SQLite file in a temp
//!    dir, WAL + synchronous=NORMAL, real HTTP to the fake LLM on 127.0.0.1) with
//!    the in-memory test channel. A turn is timed from injecting the user's message
//!    to the end of the turn (the `Idle` activity that follows the persisted answer);
//!    the time the fake spent on its requests (handler entry to end of the response
//!    body) is subtracted. Scenario A: a plain text answer. Scenario B: one tool
//!    round (`read_file` of a small workspace file), then the text answer. Then 10
//!    users talk at once (closed loop) for turns/s. Also printed: process CPU
//!    per turn, the SQL statements of one turn (sqlx's `sqlx::query` events) and
//!    the platform operations of one turn.
//! 2. Idle RSS of `target/release/switchboard chat` (stdin a pipe kept open, the
//!    fake LLM in this process), read from /proc/PID/status after ~2 s, and again
//!    after one turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/stats.rs"]
mod stats;

#[path = "../tests/support"]
#[allow(dead_code)]
mod support {
    pub mod fake_llm;
    pub mod images;
    pub mod serve;
    pub mod test_channel;
}

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use serde_json::{json, Value};
use stats::{ms, pct};
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use support::test_channel::{Log, Op, TestChannel};
use switchboard::Running;
use switchboard_platform::{
    Activity, ButtonPress, Capabilities, ChatAddress, InboundSink, MessageRef, OutgoingMessage,
    Platform, PlatformAdapter, PlatformError, PressAnswer,
};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const WARMUP: usize = 20;
const TURNS: usize = 300;
const CONCURRENT_USERS: i64 = 10;
const TURNS_PER_CONCURRENT_USER: usize = 40;
const TURN_TIMEOUT: Duration = Duration::from_secs(20);
const FILE_TEXT: &str = "alpha\nbeta\ngamma\ndelta\n";

#[tokio::main]
async fn main() {
    sql_log::install();
    println!("Switchboard turn overhead bench ({} CPUs)", cpus());
    println!();
    overhead().await;
    println!();
    idle_rss().await;
}

// ---------------------------------------------------------------------------
// 1. Gateway overhead per turn
// ---------------------------------------------------------------------------

/// What the channel saw when a turn ended.
struct Finished {
    /// When the `Idle` activity arrived (end of the turn).
    idle_at: Instant,
    /// When the text showing at the end first appeared.
    shown_at: Instant,
    text: String,
}

/// The test channel plus a cheap per-chat end-of-turn signal: waiting on
/// `TestChannel::wait_for` clones the whole log on every operation, which would
/// grow with the turn count and load the same two cores the gateway runs on.
struct Probe {
    inner: Arc<TestChannel>,
    shown: Mutex<HashMap<i64, (Instant, String)>>,
    waiters: Mutex<HashMap<i64, mpsc::UnboundedSender<Finished>>>,
}

impl Probe {
    fn new() -> Arc<Probe> {
        Arc::new(Probe {
            inner: TestChannel::new(),
            shown: Mutex::new(HashMap::new()),
            waiters: Mutex::new(HashMap::new()),
        })
    }

    /// End-of-turn signals for the DM chat of `user`.
    fn watch(&self, user: i64) -> mpsc::UnboundedReceiver<Finished> {
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.waiters).insert(user, tx);
        rx
    }

    /// Notes the text now showing in `chat` (and since when, if it changed).
    fn showed(&self, chat: &ChatAddress, text: &str) {
        let mut shown = lock(&self.shown);
        if shown.get(&chat.chat.0).is_none_or(|(_, t)| t != text) {
            shown.insert(chat.chat.0, (Instant::now(), text.to_owned()));
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[async_trait]
impl PlatformAdapter for Probe {
    fn platform(&self) -> Platform {
        self.inner.platform()
    }

    fn capabilities(&self) -> &Capabilities {
        self.inner.capabilities()
    }

    async fn run(
        &self,
        sink: InboundSink,
        shutdown: CancellationToken,
    ) -> Result<(), PlatformError> {
        self.inner.run(sink, shutdown).await
    }

    async fn send(
        &self,
        to: &ChatAddress,
        message: OutgoingMessage,
    ) -> Result<MessageRef, PlatformError> {
        let text = message.text.clone();
        let sent = self.inner.send(to, message).await?;
        self.showed(to, &text);
        Ok(sent)
    }

    async fn edit(
        &self,
        target: &MessageRef,
        message: OutgoingMessage,
    ) -> Result<(), PlatformError> {
        let text = message.text.clone();
        self.inner.edit(target, message).await?;
        self.showed(&target.chat, &text);
        Ok(())
    }

    async fn answer_press(
        &self,
        press: &ButtonPress,
        answer: PressAnswer,
    ) -> Result<(), PlatformError> {
        self.inner.answer_press(press, answer).await
    }

    async fn activity(&self, chat: &ChatAddress, activity: Activity) -> Result<(), PlatformError> {
        self.inner.activity(chat, activity).await?;
        if activity == Activity::Idle {
            let idle_at = Instant::now();
            let (shown_at, text) = lock(&self.shown)
                .remove(&chat.chat.0)
                .unwrap_or_else(|| (idle_at, String::new()));
            if let Some(tx) = lock(&self.waiters).get(&chat.chat.0) {
                let _ = tx.send(Finished {
                    idle_at,
                    shown_at,
                    text,
                });
            }
        }
        Ok(())
    }
}

/// The fake model: `A <n>` gets a text answer; `B <n>` first a `read_file` call,
/// then (on the tool result) the text answer.
fn respond(request: &Value) -> Reply {
    let last_role = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["role"].clone())
        .unwrap_or_default();
    let input = last_user_text(request).unwrap_or_default();
    if last_role == "tool" {
        return Reply::text(&answer_for(&input));
    }
    match input.split_once(' ') {
        Some(("B", n)) => Reply::tool_calls([(
            format!("call_{n}"),
            "read_file",
            json!({"path": "notes/list.txt"}),
        )]),
        _ => Reply::text(&answer_for(&input)),
    }
}

/// The final answer to the user message `input` (eight words, streamed per word).
fn answer_for(input: &str) -> String {
    format!("Done with {input}: the list has four items.")
}

/// One turn's timings.
#[derive(Clone, Copy)]
struct Sample {
    /// Inject → end of turn.
    total: Duration,
    /// Inject → final text visible.
    visible: Duration,
    /// Time the fake spent answering (all model calls of the turn).
    model: Duration,
    /// Model calls of the turn.
    calls: usize,
}

impl Sample {
    fn overhead(&self) -> Duration {
        self.total.saturating_sub(self.model)
    }
}

/// Runs one turn for `user` and waits for its end.
async fn turn(
    h: &Harness,
    probe: &Probe,
    rx: &mut mpsc::UnboundedReceiver<Finished>,
    user: i64,
    input: &str,
    model_calls: usize,
    timed: bool,
) -> Sample {
    let started = Instant::now();
    probe.inner.dm(user, input).await;
    let finished = tokio::time::timeout(TURN_TIMEOUT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("turn {input:?} of user {user} did not end"))
        .expect("probe dropped");
    let expected = answer_for(input);
    assert_eq!(finished.text, expected, "unexpected answer to {input:?}");
    let mut model = Duration::ZERO;
    let mut calls = 0;
    if timed {
        // The fake records a request once its body is out; that can trail the
        // gateway by a hair.
        let deadline = Instant::now() + Duration::from_secs(1);
        while calls < model_calls && Instant::now() < deadline {
            let times = h.llm.take_handling_times();
            calls += times.len();
            model += times.iter().sum::<Duration>();
            if calls < model_calls {
                tokio::task::yield_now().await;
            }
        }
        // More calls: the turn compacted the session first (a summary call).
        assert!(
            calls >= model_calls,
            "model calls of turn {input:?}: {calls}"
        );
    }
    Sample {
        total: finished.idle_at - started,
        visible: finished.shown_at.saturating_duration_since(started),
        model,
        calls,
    }
}

/// `TURNS` sequential turns of one user after `WARMUP` untimed ones; with the
/// CPU time this process (gateway, fake LLM and bench) used for the timed ones.
async fn sequential(
    h: &Harness,
    probe: &Probe,
    user: i64,
    kind: &str,
    calls: usize,
) -> (Vec<Sample>, Duration) {
    let mut rx = probe.watch(user);
    for i in 0..WARMUP {
        turn(
            h,
            probe,
            &mut rx,
            user,
            &format!("{kind} w{i}"),
            calls,
            false,
        )
        .await;
    }
    h.llm.take_handling_times();
    let mut samples = Vec::with_capacity(TURNS);
    let cpu = process_cpu();
    for i in 0..TURNS {
        samples.push(turn(h, probe, &mut rx, user, &format!("{kind} {i}"), calls, true).await);
    }
    (samples, process_cpu().saturating_sub(cpu))
}

/// SQL statements of `turns` more turns of `user`: the last turn's, and the mean count.
async fn statements(
    h: &Harness,
    probe: &Probe,
    user: i64,
    kind: &str,
    calls: usize,
    turns: usize,
) -> (Vec<String>, f64) {
    let mut rx = probe.watch(user);
    let mut total = 0;
    let mut last = Vec::new();
    for i in 0..turns {
        lock(&sql_log::STATEMENTS).clear();
        sql_log::set(true);
        turn(
            h,
            probe,
            &mut rx,
            user,
            &format!("{kind} s{i}"),
            calls,
            false,
        )
        .await;
        sql_log::set(false);
        last = std::mem::take(&mut *lock(&sql_log::STATEMENTS));
        total += last.len();
    }
    (last, total as f64 / turns.max(1) as f64)
}

/// Consecutive equal statements folded into `… ×n`.
fn folded(statements: &[String]) -> Vec<String> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for s in statements {
        match out.last_mut() {
            Some((last, n)) if last == s => *n += 1,
            _ => out.push((s.clone(), 1)),
        }
    }
    out.into_iter()
        .map(|(s, n)| if n > 1 { format!("{s}  ×{n}") } else { s })
        .collect()
}

/// User + system CPU time of this process so far (from /proc/self/stat).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the parenthesised command name: utime and stime are the 12th and
    // 13th fields, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// Records the SQL statements sqlx runs (its `sqlx::query` events) while on.
mod sql_log {
    use std::fmt::Debug;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    use tracing::field::{Field, Visit};
    use tracing::subscriber::Interest;
    use tracing::{Event, Metadata, Subscriber};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    static ON: AtomicBool = AtomicBool::new(false);
    pub static STATEMENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

    /// Installs the recorder as the global subscriber (nothing else is logged).
    pub fn install() {
        let subscriber = tracing_subscriber::registry().with(SqlLog);
        let _ = tracing::subscriber::set_global_default(subscriber);
    }

    pub fn set(on: bool) {
        ON.store(on, Ordering::SeqCst);
    }

    struct SqlLog;

    impl<S: Subscriber> Layer<S> for SqlLog {
        fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
            if meta.target() == "sqlx::query" {
                Interest::sometimes()
            } else {
                Interest::never()
            }
        }

        fn enabled(&self, meta: &Metadata<'_>, _: Context<'_, S>) -> bool {
            meta.target() == "sqlx::query" && ON.load(Ordering::SeqCst)
        }

        fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
            let mut sql = Sql::default();
            event.record(&mut sql);
            let text = if sql.statement.trim().is_empty() {
                sql.summary
            } else {
                sql.statement
            };
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let short: String = text.chars().take(90).collect();
            let line = if short.len() < text.len() {
                format!("{short}…")
            } else {
                short
            };
            super::lock(&STATEMENTS).push(line);
        }
    }

    #[derive(Default)]
    struct Sql {
        summary: String,
        statement: String,
    }

    impl Visit for Sql {
        fn record_str(&mut self, field: &Field, value: &str) {
            match field.name() {
                "summary" => value.clone_into(&mut self.summary),
                "db.statement" => value.clone_into(&mut self.statement),
                _ => {}
            }
        }

        fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
            if field.name() == "summary" && self.summary.is_empty() {
                self.summary = format!("{value:?}");
            }
        }
    }
}

/// `CONCURRENT_USERS` users, each running turns back to back. Returns the wall
/// time and every turn's latency (inject → end of turn, model time included).
async fn concurrent(
    h: &Arc<Harness>,
    probe: &Arc<Probe>,
    first_user: i64,
    kind: &'static str,
) -> (Duration, Vec<Duration>, Duration) {
    h.llm.take_handling_times();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for user in first_user..first_user + CONCURRENT_USERS {
        let (h, probe) = (Arc::clone(h), Arc::clone(probe));
        tasks.push(tokio::spawn(async move {
            let mut rx = probe.watch(user);
            let mut latencies = Vec::with_capacity(TURNS_PER_CONCURRENT_USER);
            for i in 0..TURNS_PER_CONCURRENT_USER {
                let input = format!("{kind} u{user}-{i}");
                let s = turn(&h, &probe, &mut rx, user, &input, 0, false).await;
                latencies.push(s.total);
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("user task"));
    }
    let wall = started.elapsed();
    let model: Duration = h.llm.take_handling_times().iter().sum();
    (wall, latencies, model)
}

async fn overhead() {
    let probe = Probe::new();
    let adapter: Arc<dyn PlatformAdapter> = probe.clone();
    let h = Arc::new(Harness::start(adapter).await);
    h.write("notes/list.txt", FILE_TEXT);
    h.llm.set_responder(respond);
    h.llm.time_handling();

    println!("## 1. Gateway overhead per turn (model answers instantly)");
    println!(
        "   {WARMUP} warm-up + {TURNS} timed turns per scenario, one user; SQLite file in {} \
         (WAL, synchronous=NORMAL), HTTP to the fake LLM on 127.0.0.1",
        h.data_dir().display()
    );
    println!("   overhead = (inject → end of turn) − time the fake spent on its requests");
    println!();

    let (a, cpu_a) = sequential(&h, &probe, 1, "A", 1).await;
    let (b, cpu_b) = sequential(&h, &probe, 2, "B", 2).await;

    println!(
        "   {:<34} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "ms per turn", "p50", "p90", "p99", "max", "mean"
    );
    for (name, all, expected) in [("A text answer", &a, 1), ("B one read_file round", &b, 2)] {
        // Turns that compacted the session (every ~100 turns of one user, by
        // the 200-message rule) are a different event: counted, not mixed in.
        let samples: Vec<&Sample> = all.iter().filter(|s| s.calls == expected).collect();
        let compacted = all.len() - samples.len();
        if compacted > 0 {
            println!(
                "   ({name}: {compacted} of {} turns compacted first; left out below)",
                all.len()
            );
        }
        let over: Vec<Duration> = samples.iter().map(|s| s.overhead()).collect();
        let total: Vec<Duration> = samples.iter().map(|s| s.total).collect();
        let visible: Vec<Duration> = samples.iter().map(|s| s.visible).collect();
        let model: Vec<Duration> = samples.iter().map(|s| s.model).collect();
        row(&format!("{name}: overhead"), &over);
        row("    inject → end of turn", &total);
        row("    inject → answer visible", &visible);
        row(
            &format!(
                "    model time ({} call{}/turn)",
                samples[0].calls,
                if samples[0].calls == 1 { "" } else { "s" }
            ),
            &model,
        );
    }
    println!(
        "   process CPU per turn (gateway + fake + bench, /proc/self/stat): A {:.2} ms, B {:.2} ms",
        ms(cpu_a) / TURNS as f64,
        ms(cpu_b) / TURNS as f64,
    );
    println!();

    let (sql_a, mean_a) = statements(&h, &probe, 1, "A", 1, 10).await;
    let (sql_b, mean_b) = statements(&h, &probe, 2, "B", 2, 10).await;
    println!(
        "   SQL statements per turn (sqlx::query events; pool pings not included): \
         A {mean_a:.1}, B {mean_b:.1}"
    );
    for (name, list) in [("A", &sql_a), ("B", &sql_b)] {
        println!("   those of one {name} turn, in order:");
        for s in folded(list) {
            println!("     {s}");
        }
    }
    println!();

    println!(
        "   {CONCURRENT_USERS} users at once, {TURNS_PER_CONCURRENT_USER} turns each, back to back \
         (latency includes model time):"
    );
    println!(
        "   {:<34} {:>8} {:>10} {:>10} {:>10}",
        "", "turns/s", "p50 ms", "p99 ms", "model ms/t"
    );
    for (kind, first_user) in [("A", 100), ("B", 200)] {
        let (wall, mut latencies, model) = concurrent(&h, &probe, first_user, kind).await;
        let n = latencies.len();
        latencies.sort();
        println!(
            "   {:<34} {:>8.0} {:>10.2} {:>10.2} {:>10.3}",
            format!("{kind} ({n} turns in {:.2} s)", wall.as_secs_f64()),
            n as f64 / wall.as_secs_f64(),
            ms(pct(&latencies, 50.0)),
            ms(pct(&latencies, 99.0)),
            ms(model) / n as f64,
        );
    }

    let log = probe.inner.log();
    println!();
    println!("   channel operations of the last turn of user 1 (A):");
    println!("     {}", last_turn_ops(&log, 1));
    let db = h.data_dir().join("switchboard.db");
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!();
    println!(
        "   after the run: {} bot messages, {} channel operations, database {} KiB + WAL {} KiB",
        log.messages.len(),
        log.ops.len(),
        size(&db) / 1024,
        size(&db.with_extension("db-wal")) / 1024,
    );
    let h = Arc::into_inner(h).expect("no other handle on the harness");
    h.stop().await;
}

/// The operations of `user`'s last turn in their DM, compactly.
fn last_turn_ops(log: &Log, user: i64) -> String {
    let in_chat = |op: &Op| match op {
        Op::Send { chat, .. } | Op::Activity { chat, .. } => chat.chat.0 == user,
        Op::Edit { id, .. } => log
            .messages
            .get(&id.0)
            .is_some_and(|m| m.chat.chat.0 == user),
        Op::Answer { .. } => false,
        Op::File { chat, .. } => chat.chat.0 == user,
    };
    let ops: Vec<&Op> = log.ops.iter().filter(|op| in_chat(op)).collect();
    let start = ops
        .iter()
        .rposition(|op| {
            matches!(
                op,
                Op::Activity {
                    activity: Activity::Typing,
                    ..
                }
            )
        })
        .unwrap_or(0);
    let mut shown = String::new();
    ops[start..]
        .iter()
        .map(|op| match op {
            Op::Activity { activity, .. } => format!("{activity:?}"),
            Op::Send { text, .. } => {
                shown.clone_from(text);
                format!("Send({text:?})")
            }
            Op::Edit { text, actions, .. } => {
                let same = if *text == shown { "same text" } else { "" };
                shown.clone_from(text);
                let buttons = if actions.is_empty() {
                    String::new()
                } else {
                    format!(" +{} buttons", actions.len())
                };
                if same.is_empty() {
                    format!("Edit({text:?}{buttons})")
                } else {
                    format!("Edit({same}{buttons})")
                }
            }
            Op::Answer { .. } => "Answer".to_owned(),
            Op::File { name, .. } => format!("File({name:?})"),
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

/// The real core on a temp dir with a fresh fake LLM (the set-up of the e2e
/// harness, `tests/support/e2e.rs`, around any adapter).
struct Harness {
    llm: FakeLlm,
    running: Running,
    shutdown: CancellationToken,
    dir: tempfile::TempDir,
}

impl Harness {
    async fn start(adapter: Arc<dyn PlatformAdapter>) -> Harness {
        let llm = FakeLlm::start().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let vars: HashMap<&str, String> = [
            ("LLM_BASE_URL", llm.base_url()),
            ("LLM_MODEL", "fake-model".to_owned()),
            ("DATA_DIR", data.display().to_string()),
            (
                "DATABASE_URL",
                format!("sqlite://{}", data.join("switchboard.db").display()),
            ),
            ("WORKSPACE_DIR", dir.path().join("ws").display().to_string()),
            ("ACCESS_POLICY", "open".to_owned()),
            // The default (20 per minute) would throttle the bench.
            ("USER_MESSAGES_PER_MINUTE", "1000000".to_owned()),
        ]
        .into_iter()
        .collect();
        let config = switchboard::Config::from_lookup(|k| vars.get(k).cloned()).expect("config");
        let shutdown = CancellationToken::new();
        let running = switchboard::start(&config, vec![adapter], shutdown.clone())
            .await
            .expect("switchboard starts");
        Harness {
            llm,
            running,
            shutdown,
            dir,
        }
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.dir.path().join("ws").join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, content).expect("write");
    }

    async fn stop(self) {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.running.wait()).await;
    }
}

fn row(name: &str, values: &[Duration]) {
    let mut sorted = values.to_vec();
    sorted.sort();
    let mean = values.iter().sum::<Duration>() / values.len().max(1) as u32;
    println!(
        "   {:<34} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
        name,
        ms(pct(&sorted, 50.0)),
        ms(pct(&sorted, 90.0)),
        ms(pct(&sorted, 99.0)),
        ms(*sorted.last().unwrap_or(&Duration::ZERO)),
        ms(mean),
    );
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

// ---------------------------------------------------------------------------
// 2. Idle RSS of `switchboard chat`
// ---------------------------------------------------------------------------

async fn idle_rss() {
    println!("## 2. Idle RSS of `switchboard chat`");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let binary = target.join("release").join("switchboard");
    if !binary.is_file() {
        println!(
            "   SKIPPED: {} is not built. Run `cargo build --release --bin switchboard` first, \
             then this bench again.",
            binary.display()
        );
        return;
    }
    if let Some(newer) = newer_source(root, &binary) {
        println!(
            "   WARNING: {} is older than {}; rebuild with `cargo build --release --bin switchboard` \
             for current figures.",
            binary.display(),
            newer.display()
        );
    }

    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let input = last_user_text(request).unwrap_or_default();
        Reply::text(&format!("You said: {input}"))
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut child = tokio::process::Command::new(&binary)
        .arg("chat")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LLM_BASE_URL", llm.base_url())
        .env("LLM_MODEL", "fake-model")
        .env("DATA_DIR", &data)
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start switchboard chat");
    let pid = child.id().expect("child pid");
    let mut stdin = child.stdin.take().expect("piped stdin");

    tokio::time::sleep(Duration::from_secs(2)).await;
    if let Ok(Some(status)) = child.try_wait() {
        let out = child.wait_with_output().await.expect("output");
        println!(
            "   FAILED: `switchboard chat` exited early ({status}): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    let idle = proc_status(pid);

    // One turn, then idle again.
    stdin
        .write_all(b"hello there\n")
        .await
        .expect("write stdin");
    stdin.flush().await.expect("flush stdin");
    llm.wait_for_requests(1).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after_turn = proc_status(pid);

    println!("   binary: {} (release profile)", binary.display());
    println!(
        "   {:<34} {:>10} {:>10} {:>8}",
        "", "VmRSS", "VmHWM", "threads"
    );
    for (name, status) in [
        ("idle, 2 s after start", &idle),
        ("after one turn, 1 s idle", &after_turn),
    ] {
        println!(
            "   {:<34} {:>10} {:>10} {:>8}",
            name,
            field(status, "VmRSS"),
            field(status, "VmHWM"),
            field(status, "Threads"),
        );
    }

    // End of input: the chat finishes and exits.
    drop(stdin);
    match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
        Ok(Ok(status)) if status.success() => {}
        Ok(other) => println!("   note: `switchboard chat` ended with {other:?}"),
        Err(_) => {
            println!("   note: `switchboard chat` did not exit within 5 s of end of input; killed");
            let _ = child.kill().await;
        }
    }
}

fn proc_status(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
}

/// The value of `name:` in /proc/PID/status, e.g. `10368 kB`.
fn field(status: &str, name: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map_or_else(|| "?".to_owned(), |v| v.trim().to_owned())
}

/// A source file (src/, adapters/*/src/) modified after `binary` was built.
fn newer_source(root: &Path, binary: &Path) -> Option<PathBuf> {
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok()?;
    let mut dirs = vec![root.join("src"), root.join("migrations")];
    if let Ok(entries) = std::fs::read_dir(root.join("adapters")) {
        dirs.extend(entries.flatten().map(|e| e.path().join("src")));
    }
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(modified) = entry.metadata().and_then(|m| m.modified()) {
                if modified > built && newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                    newest = Some((modified, path));
                }
            }
        }
    }
    newest.map(|(_, path)| path)
}
