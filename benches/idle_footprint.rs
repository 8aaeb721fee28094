//! The footprint of the shipped binary: `switchboard run` with Telegram and
//! Discord configured against the fakes (and the fake model), measured from
//! outside the process.
//!
//! `cargo build --release --bin switchboard && cargo bench --profile dev --bench idle_footprint`
//! (the bench itself may be a debug build: it only starts the release binary
//! and waits; `SWITCHBOARD_BIN` names another binary).
//!
//! 1. Start to first answer, `RUNS` times (default 5): a Telegram message
//!    already waiting, the binary started on a fresh data directory; the time
//!    until its answer reaches the fake Bot API (so process start, migrations,
//!    both adapters connecting, the turn). Then the same on the existing data
//!    directory (a restart).
//! 2. Idle: as soon as both platforms are up (Discord's shard ready,
//!    Telegram polling), and again `IDLE_SECS` (default 5) after the gateway
//!    logged that start-up's pages were released (src/footprint.rs): `/proc/PID/status` (VmRSS,
//!    threads) and `/proc/PID/smaps_rollup` (private = Private_Clean +
//!    Private_Dirty), with the resident pages split by what they map (the
//!    binary's mappings by permission — code `r-xp`, read-only data `r--p`,
//!    relocated and writable data `rw-p` —, shared libraries, anonymous
//!    memory); again after one answer on
//!    each platform.
//! 3. CPU per answer: `ANSWERS` (default 100) Telegram questions one after
//!    the other, the process's user + system time over them.
//!
//! `GATEWAY_ENV="KEY=value …"` adds settings (e.g. `REACTIONS=off`) to compare.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::fake_discord::{FakeDiscord, UserMessage, TOKEN as DISCORD_TOKEN};
use support::fake_llm::{FakeLlm, Reply};
use support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN as TELEGRAM_TOKEN};
use support::process::{Gateway, Setup};

const WAIT: Duration = Duration::from_secs(60);
const DM_CHANNEL: u64 = 4_242;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `$SWITCHBOARD_BIN`, else `target/release/switchboard`.
fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("SWITCHBOARD_BIN") {
        return PathBuf::from(bin);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("release/switchboard")
}

/// The fakes one gateway talks to.
struct Fakes {
    llm: FakeLlm,
    tg: FakeTelegram,
    discord: FakeDiscord,
}

impl Fakes {
    async fn start() -> Fakes {
        let llm = FakeLlm::start().await;
        llm.set_responder(|_| Reply::text("OK"));
        let discord = FakeDiscord::start().await;
        discord.add_dm(DM_CHANNEL);
        Fakes {
            llm,
            tg: FakeTelegram::start_lenient().await.unwrap(),
            discord,
        }
    }

    fn setup(&self, home: &Path) -> Setup {
        let mut setup = Setup::new(home, &self.llm.base_url(), None);
        setup
            .set("RUST_LOG", "warn,switchboard::footprint=info")
            .set("MEMORY_ENABLED", "false")
            // 100 questions in a row from one user: above the default 20 a minute.
            .set("USER_MESSAGES_PER_MINUTE", "1000")
            .set("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN)
            .set("TELEGRAM_API_URL", &self.tg.api_url())
            .set("DISCORD_BOT_TOKEN", DISCORD_TOKEN)
            .set("DISCORD_API_URL", &self.discord.api_url);
        // `GATEWAY_ENV="REACTIONS=off …"`: settings to compare with.
        let extra = std::env::var("GATEWAY_ENV").unwrap_or_default();
        for pair in extra.split_whitespace() {
            if let Some((key, value)) = pair.split_once('=') {
                setup.set(key, value);
            }
        }
        setup
    }

    async fn telegram_answers(&self, user: i64, n: usize) {
        let answered = self
            .tg
            .wait_until(WAIT, |t| t.bot_messages(user).len() >= n)
            .await;
        assert!(answered, "no answer {n} on Telegram");
    }
}

fn start(binary: &Path, setup: &Setup, home: &Path) -> Gateway {
    Gateway::start_binary(binary, setup, None, home)
}

async fn first_answer(binary: &Path, runs: u64) {
    println!("## 1. Start to first answer ({runs} runs each)");
    for restart in [false, true] {
        let fakes = Fakes::start().await;
        let home = tempfile::tempdir().unwrap();
        let setup = fakes.setup(home.path());
        let mut times = Vec::new();
        for run in 0..runs {
            let fresh = tempfile::tempdir().unwrap();
            let home = if restart { home.path() } else { fresh.path() };
            let setup = if restart {
                setup.clone()
            } else {
                fakes.setup(home)
            };
            let user = FakeUser::new(1_000 + run as i64, "Ann");
            fakes.tg.message(Where::Dm, &user, "hello");
            let started = Instant::now();
            let mut gateway = start(binary, &setup, home);
            fakes.telegram_answers(user.id, 1).await;
            times.push(started.elapsed());
            gateway.stop().await;
        }
        times.sort();
        let label = if restart {
            "restart"
        } else {
            "fresh data directory"
        };
        println!(
            "   {label:<22} median {:>7.1?}  min {:>7.1?}  max {:>7.1?}",
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    }
}

/// Resident memory of `pid`, in kB: `VmRSS`, the private part, and the
/// resident pages by what they map.
fn memory(pid: u32) -> (u64, u64, u64, BTreeMap<String, u64>) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    let kb = |text: &str, name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap_or(0)
    };
    let private = kb(&rollup, "Private_Clean") + kb(&rollup, "Private_Dirty");
    let mut by_mapping: BTreeMap<String, u64> = BTreeMap::new();
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let own = std::fs::canonicalize(binary()).ok();
    let mut current = String::new();
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            let perms = line.split_whitespace().nth(1).unwrap_or("");
            current = match line.split_whitespace().nth(5) {
                Some(path) if Some(Path::new(path)) == own.as_deref() => {
                    format!("the binary {perms}")
                }
                Some(path) if path.starts_with('/') => "shared libraries".into(),
                Some(other) => other.to_owned(),
                None => "anonymous (heap, stacks)".into(),
            };
        } else if let Some(rest) = line.strip_prefix("Rss:") {
            let v: u64 = rest.trim().trim_end_matches(" kB").parse().unwrap_or(0);
            *by_mapping.entry(current.clone()).or_default() += v;
        }
    }
    (
        kb(&status, "VmRSS"),
        private,
        kb(&status, "Threads"),
        by_mapping,
    )
}

fn report(label: &str, pid: u32) {
    let (rss, private, threads, by_mapping) = memory(pid);
    let parts: Vec<String> = by_mapping
        .iter()
        .filter(|(_, kb)| **kb > 0)
        .map(|(name, kb)| format!("{name} {:.1}", *kb as f64 / 1024.0))
        .collect();
    println!(
        "   {label:<30} RSS {:>5.1} MB  private {:>5.1} MB  threads {threads}  ({} MB)",
        rss as f64 / 1024.0,
        private as f64 / 1024.0,
        parts.join(", ")
    );
}

/// User and system CPU of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    (fields[11].parse().unwrap(), fields[12].parse().unwrap())
}

async fn idle_and_cpu(binary: &Path, idle: Duration) {
    println!("## 2. Idle, Telegram and Discord up ({idle:?} after each step)");
    let fakes = Fakes::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut gateway = start(binary, &fakes.setup(home.path()), home.path());
    let pid = gateway.pid().unwrap();
    assert!(fakes.discord.wait_ready(1).await, "no Discord shard");
    assert!(
        fakes
            .tg
            .wait_until(WAIT, |t| t.calls_to("getUpdates").len() >= 2)
            .await,
        "Telegram is not polling"
    );
    report("up, just connected", pid);
    let released = released_line(&gateway).await;
    println!("   ({released})");
    tokio::time::sleep(idle).await;
    report("up, no message yet", pid);

    let ann = FakeUser::new(700, "Ann");
    fakes.tg.message(Where::Dm, &ann, "hello");
    fakes.telegram_answers(700, 1).await;
    fakes
        .discord
        .send_message(UserMessage::new(DM_CHANNEL, 701, "hello"))
        .expect("shard connected");
    let answered = fakes
        .discord
        .wait_for(|d| !d.bot_messages(DM_CHANNEL).is_empty())
        .await;
    assert!(answered, "no answer on Discord");
    tokio::time::sleep(idle).await;
    report("after one answer on each", pid);

    let answers = env_u64("ANSWERS", 100) as usize;
    println!("## 3. CPU per answer ({answers} Telegram questions in a row)");
    let ticks = cpu_ticks(pid);
    let calls_before = fakes.tg.calls().len();
    let started = Instant::now();
    for n in 2..=answers + 1 {
        fakes.tg.message(Where::Dm, &ann, &format!("question {n}"));
        fakes.telegram_answers(700, n).await;
    }
    let took = started.elapsed();
    let mut calls: BTreeMap<String, usize> = BTreeMap::new();
    for call in &fakes.tg.calls()[calls_before..] {
        *calls.entry(call.method.clone()).or_default() += 1;
    }
    println!("   in {took:.1?}; Bot API calls: {calls:?}");
    let per_answer = |ticks: u64| ticks as f64 * 10.0 / answers as f64; // USER_HZ 100
    let (user, system) = cpu_ticks(pid);
    let (user, system) = (per_answer(user - ticks.0), per_answer(system - ticks.1));
    println!(
        "   {:.2} ms CPU per answer ({user:.2} ms user, {system:.2} ms system)",
        user + system
    );
    report(&format!("after {} answers", answers + 1), pid);
    gateway.stop().await;
    let log = gateway.log();
    let log: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains("start-up pages released"))
        .collect();
    let log = log.join("\n");
    if !log.trim().is_empty() {
        println!("   (its log: {})", log.trim());
    }
}

/// The gateway's "start-up pages released" line, once it has settled.
async fn released_line(gateway: &Gateway) -> String {
    let start = Instant::now();
    loop {
        if let Some(line) = gateway
            .log()
            .lines()
            .find(|l| l.contains("start-up pages released"))
        {
            let at = line.find("start-up").unwrap_or(0);
            return line[at..].to_owned();
        }
        assert!(start.elapsed() < WAIT, "never released: {}", gateway.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn main() {
    let binary = binary();
    assert!(
        binary.is_file(),
        "{} is not built: run `cargo build --release --bin switchboard` first",
        binary.display()
    );
    let size = std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0);
    println!("binary: {} ({:.1} MB)", binary.display(), size as f64 / 1e6);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        first_answer(&binary, env_u64("RUNS", 5)).await;
        idle_and_cpu(&binary, Duration::from_secs(env_u64("IDLE_SECS", 5))).await;
    });
}
