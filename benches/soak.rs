//! Soak: several real `switchboard run` processes on one PostgreSQL behind a
//! round-robin webhook balancer, many users ordering through the fake Bot
//! API (Telegram's published limits enforced), one process killed with
//! `SIGKILL` at a fixed interval and restarted at once. Every tenth order
//! needs an approval card, which the user presses. At the end it prints what
//! was sent, answered once, answered twice, never answered, the presses and
//! the effects they caused, the delivered rate against Telegram's ceiling,
//! latencies, and how long the messages a killed process held waited for
//! another to answer them.
//!
//! `cargo bench --bench soak` runs 60 s with a kill every 15 s;
//! `cargo bench --bench soak -- --full` the 5 minutes with a kill every 30 s.
//! Env: SOAK_PROCESSES=5, SOAK_USERS=500, SOAK_SECONDS, SOAK_KILL_EVERY
//! (seconds), TEST_DATABASE_URL (default the local server's `test`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::effects::Effects;
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use support::fake_telegram::{post_webhook, FakeTelegram, FakeUser, Where, TOKEN};
use support::process::{free_port, Gateway, Setup};
use tokio::time::Instant;

const SECRET: &str = "soak-secret";
/// Every this many orders, one that needs a card.
const CARD_EVERY: usize = 10;
/// How long one answer may take before the order counts as never answered.
const ANSWER_WITHIN: Duration = Duration::from_secs(120);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(soak());
}

/// The model: "order N" → `record_order`, "confirm N" → `confirm_order`
/// (needs a card), a tool result → "done N".
fn model(request: &Value) -> Reply {
    let text = last_user_text(request).unwrap_or_default();
    let (tool, item) = ["confirm ", "order "]
        .iter()
        .find_map(|verb| {
            let at = text.find(verb)?;
            let digits: String = text[at + verb.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let tool = if *verb == "confirm " {
                "confirm_order"
            } else {
                "record_order"
            };
            Some((tool, digits))
        })
        .unwrap_or(("record_order", "0".into()));
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned();
    match last {
        Some(last) if last["role"] == "tool" => Reply::text(&format!("done {item}")),
        _ => Reply::tool_calls([(format!("call_{item}"), tool, json!({ "item": item }))]),
    }
}

/// Which process served each update (the balancer's record).
type Served = Arc<Mutex<HashMap<i64, usize>>>;

/// A round-robin webhook balancer over the processes' ports: a process that
/// does not answer is skipped; none answering is a 503 (Telegram retries).
async fn balancer(ports: Vec<u16>, served: Served) -> u16 {
    let next = Arc::new(AtomicUsize::new(0));
    let client = reqwest::Client::new();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let (ports, next, client, served) = (
                ports.clone(),
                Arc::clone(&next),
                client.clone(),
                Arc::clone(&served),
            );
            async move {
                let id = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|v| v["update_id"].as_i64());
                for _ in 0..ports.len() {
                    let slot = next.fetch_add(1, Ordering::Relaxed) % ports.len();
                    let sent = client
                        .post(format!("http://127.0.0.1:{}/hook", ports[slot]))
                        .header("X-Telegram-Bot-Api-Secret-Token", SECRET)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await;
                    if let Ok(r) = sent {
                        if r.status().is_success() {
                            if let Some(id) = id {
                                served.lock().unwrap().insert(id, slot);
                            }
                            return axum::http::StatusCode::OK;
                        }
                    }
                }
                axum::http::StatusCode::SERVICE_UNAVAILABLE
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// What the run saw.
#[derive(Default)]
struct Tally {
    sent: usize,
    latencies: Vec<Duration>,
    never: usize,
    presses: usize,
    /// Orders sent (update id, item, when the first delivery was tried).
    orders: Vec<(i64, String, Instant)>,
    /// When each process was killed (slot, instant, wall clock).
    kills: Vec<(usize, Instant, chrono::DateTime<chrono::Utc>)>,
    /// The items that needed a card, and every user's chat.
    carded: Vec<String>,
    chats: Vec<i64>,
}

struct World {
    tg: FakeTelegram,
    hook: String,
    next_update: AtomicUsize,
    tally: Mutex<Tally>,
    /// When each item's answer was first seen.
    answered: Mutex<HashMap<String, Instant>>,
    deadline: Instant,
}

impl World {
    /// Delivers `update` through the balancer until a process takes it.
    async fn deliver(&self, mut update: Value) -> i64 {
        let id = 1_000_000 + self.next_update.fetch_add(1, Ordering::Relaxed) as i64;
        update["update_id"] = json!(id);
        let body = update.to_string();
        loop {
            if let Ok(200) = post_webhook(&self.hook, Some(SECRET), body.clone()).await {
                return id;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn answer(&self, item: &str, asked: Instant) -> Option<Instant> {
        while asked.elapsed() < ANSWER_WITHIN {
            if let Some(at) = self.answered.lock().unwrap().get(item) {
                return Some(*at);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// One user: orders until the deadline, each after the last is answered.
    async fn user(self: Arc<Self>, n: usize) {
        let user = FakeUser::new(100_000 + n as i64, &format!("u{n}"));
        let chat = self.tg.ensure_chat(Where::Dm, &user);
        self.tally.lock().unwrap().chats.push(chat);
        let mut k = 0;
        while Instant::now() < self.deadline {
            k += 1;
            let item = format!("{n}{k:04}");
            let card = (n + k).is_multiple_of(CARD_EVERY);
            let verb = if card { "confirm" } else { "order" };
            let asked = Instant::now();
            let update = self
                .tg
                .message_update(Where::Dm, &user, &format!("{verb} {item}"));
            let id = self.deliver(update).await;
            {
                let mut t = self.tally.lock().unwrap();
                t.sent += 1;
                t.orders.push((id, item.clone(), asked));
                if card {
                    t.carded.push(item.clone());
                }
            }
            if card && !self.press_allow(&user, chat, asked).await {
                self.tally.lock().unwrap().never += 1;
                continue;
            }
            match self.answer(&item, asked).await {
                Some(at) => self.tally.lock().unwrap().latencies.push(at - asked),
                None => self.tally.lock().unwrap().never += 1,
            }
        }
    }

    /// Waits for the card in `chat` and presses "Allow once".
    async fn press_allow(&self, user: &FakeUser, chat: i64, asked: Instant) -> bool {
        while asked.elapsed() < ANSWER_WITHIN {
            let card = self.tg.bot_messages(chat).into_iter().rev().find_map(|m| {
                let data = m.reply_markup.as_ref()?["inline_keyboard"]
                    .as_array()?
                    .iter()
                    .flat_map(|row| row.as_array().into_iter().flatten())
                    .filter_map(|b| b["callback_data"].as_str())
                    .find(|d| d.ends_with(":y"))?
                    .to_owned();
                Some((m.message_id, data))
            });
            if let Some((message, data)) = card {
                let (_, update) = self.tg.callback_update(Where::Dm, user, message, &data);
                self.deliver(update).await;
                self.tally.lock().unwrap().presses += 1;
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }
}

/// Reads the Bot API calls as they come: the first time an answer
/// "done N" is shown is when N was answered.
async fn watch(world: Arc<World>) {
    let mut from = 0;
    loop {
        let (calls, next) = world.tg.calls_since(from);
        from = next;
        for call in calls.iter().filter(|c| c.ok) {
            let text = call.params["text"].as_str().unwrap_or_default();
            if let Some(item) = text
                .trim_end()
                .lines()
                .last()
                .and_then(|l| l.strip_prefix("done "))
            {
                world
                    .answered
                    .lock()
                    .unwrap()
                    .entry(item.to_owned())
                    .or_insert(call.at);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn soak() {
    let full = std::env::args().any(|a| a == "--full");
    let processes = env_usize("SOAK_PROCESSES", 5);
    let users = env_usize("SOAK_USERS", 500);
    let seconds = env_usize("SOAK_SECONDS", if full { 300 } else { 60 });
    let kill_every = env_usize("SOAK_KILL_EVERY", if full { 30 } else { 15 });
    let admin = std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let database = support::postgres::fresh_postgres(&admin).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let effects = Effects::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let tools = home.path().join("http_tools.json");
    let url = format!("http://{}/order", effects.addr);
    let declared = json!({"tools": [
        {"name": "record_order", "description": "Records an order", "method": "POST", "url": url,
         "requires_approval": false,
         "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}},
        {"name": "confirm_order", "description": "Confirms an order (needs approval)", "method": "POST", "url": url,
         "requires_approval": true,
         "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}}
    ]});
    std::fs::write(&tools, declared.to_string()).unwrap();
    let ports: Vec<u16> = (0..processes).map(|_| free_port()).collect();
    let setups: Vec<(Setup, tempfile::TempDir)> = ports
        .iter()
        .map(|port| {
            let dir = tempfile::tempdir().unwrap();
            let mut setup = Setup::new(dir.path(), &llm.base_url(), Some(&database));
            setup
                .set("RUST_LOG", "warn,switchboard::gateway=info")
                .set("HTTP_TOOLS_FILE", &tools.display().to_string())
                .set("WEB_FETCH_ALLOW", "127.0.0.1")
                .set("USER_MESSAGES_PER_MINUTE", "1000")
                .set("TELEGRAM_BOT_TOKEN", TOKEN)
                .set("TELEGRAM_API_URL", &tg.api_url())
                .set("TELEGRAM_WEBHOOK_URL", "https://bot.example.test/hook")
                .set("TELEGRAM_WEBHOOK_LISTEN", &format!("127.0.0.1:{port}"))
                .set("TELEGRAM_WEBHOOK_SECRET", SECRET);
            (setup, dir)
        })
        .collect();
    let mut gateways: Vec<Gateway> = setups
        .iter()
        .map(|(s, d)| Gateway::start(s, None, d.path()))
        .collect();
    let served: Served = Arc::default();
    let hook = format!(
        "http://127.0.0.1:{}/hook",
        balancer(ports, Arc::clone(&served)).await
    );
    println!("soak: {processes} processes on PostgreSQL, {users} users, {seconds} s, one SIGKILL every {kill_every} s");
    let started = Instant::now();
    let world = Arc::new(World {
        tg,
        hook,
        next_update: AtomicUsize::new(0),
        tally: Mutex::default(),
        answered: Mutex::default(),
        deadline: started + Duration::from_secs(seconds as u64),
    });
    tokio::spawn(watch(Arc::clone(&world)));
    let drivers: Vec<_> = (0..users)
        .map(|n| tokio::spawn(Arc::clone(&world).user(n)))
        .collect();
    // The killer; the killed processes' logs are kept for the takeover times.
    let mut logs = Vec::new();
    let mut victim = 0;
    while Instant::now() + Duration::from_secs(kill_every as u64) < world.deadline {
        tokio::time::sleep(Duration::from_secs(kill_every as u64)).await;
        gateways[victim].kill().await;
        world
            .tally
            .lock()
            .unwrap()
            .kills
            .push((victim, Instant::now(), chrono::Utc::now()));
        let (setup, dir) = &setups[victim];
        let dead = std::mem::replace(
            &mut gateways[victim],
            Gateway::start(setup, None, dir.path()),
        );
        logs.push(dead.log);
        victim = (victim + 1) % processes;
    }
    for d in drivers {
        let _ = d.await;
    }
    let elapsed = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    logs.extend(gateways.iter().map(|g| Arc::clone(&g.log)));
    let logs: Vec<String> = logs.iter().map(|l| l.lock().unwrap().clone()).collect();
    report(&world, &served, &effects, elapsed, &logs);
    for g in &mut gateways {
        g.stop().await;
    }
}

/// When any process logged taking over a stopped process's queue, from
/// the logs' timestamps.
fn takeover_marks(logs: &[String]) -> Vec<chrono::DateTime<chrono::Utc>> {
    let mut marks: Vec<_> = logs
        .iter()
        .flat_map(|log| log.lines())
        .filter(|l| l.contains("taking over queued messages"))
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|ts| chrono::DateTime::parse_from_rfc3339(ts).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
        .collect();
    marks.sort();
    marks
}

fn report(world: &World, served: &Served, effects: &Effects, elapsed: Duration, logs: &[String]) {
    let tally = world.tally.lock().unwrap();
    let answered = world.answered.lock().unwrap();
    // Answered twice: two bot messages showing "done N" at the end.
    let mut shown: HashMap<String, usize> = HashMap::new();
    for chat in &tally.chats {
        for m in world.tg.bot_messages(*chat) {
            if let Some(item) = m
                .text
                .trim_end()
                .lines()
                .last()
                .and_then(|l| l.strip_prefix("done "))
            {
                *shown.entry(item.to_owned()).or_default() += 1;
            }
        }
    }
    let twice = shown.values().filter(|n| **n > 1).count();
    // A kill that cut in after a tool had started (or an answer had begun)
    // ends the order with a notice instead of a second run.
    let notices: usize = tally
        .chats
        .iter()
        .map(|chat| {
            world
                .tg
                .bot_messages(*chat)
                .iter()
                .filter(|m| m.text.starts_with("⚠️"))
                .count()
        })
        .sum();
    let unanswered = tally
        .orders
        .iter()
        .filter(|(_, item, _)| !answered.contains_key(item))
        .count();
    let mut latencies = tally.latencies.clone();
    latencies.sort();
    // The messages a killed process had taken (delivered to it before the
    // kill) and not answered by then: how long after the kill their answer
    // came — from a peer, or from its restart.
    let served = served.lock().unwrap();
    let mut takeovers: Vec<Duration> = Vec::new();
    for (slot, killed, _) in &tally.kills {
        for (id, item, asked) in &tally.orders {
            if served.get(id) != Some(slot) || asked > killed {
                continue;
            }
            if let Some(at) = answered.get(item).filter(|at| *at > killed) {
                takeovers.push(*at - *killed);
            }
        }
    }
    takeovers.sort();
    // Kill to the first "taking over" logged after it (a process with
    // nothing queued leaves nothing to take over).
    let marks = takeover_marks(logs);
    let mut detected: Vec<Duration> = tally
        .kills
        .iter()
        .filter_map(|(_, _, at)| {
            marks
                .iter()
                .find(|m| *m > at)
                .map(|m| (*m - *at).to_std().unwrap_or_default())
        })
        .filter(|d| *d < Duration::from_secs(30))
        .collect();
    detected.sort();
    let secs = elapsed.as_secs_f64();
    println!("  messages sent:          {}", tally.sent);
    println!(
        "  answered once:          {}",
        answered.len().saturating_sub(twice)
    );
    println!("  answered twice:         {twice}");
    println!(
        "  not answered:           {unanswered} ({notices} notices of an answer cut short by a kill; never answered nor told: {})",
        unanswered.saturating_sub(notices)
    );
    println!("  approvals pressed:      {}", tally.presses);
    let carded: std::collections::HashSet<&String> = tally.carded.iter().collect();
    let (mut confirmed, mut ordered, mut doubled) = (0, 0, 0);
    for (_, item, _) in &tally.orders {
        let n = effects.count(item);
        doubled += usize::from(n > 1);
        if carded.contains(item) {
            confirmed += n;
        } else {
            ordered += n;
        }
    }
    println!("  effects run:            {confirmed} after presses, {ordered} for orders without a card, {doubled} run twice");
    println!(
        "  delivered:              {:.1} answers/s ({:.0} % of Telegram's 30/s per bot)",
        answered.len() as f64 / secs,
        answered.len() as f64 / secs / 30.0 * 100.0
    );
    println!(
        "  latency:                p50 {:?}  p99 {:?}",
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99)
    );
    println!(
        "  kills:                  {}; answers of messages the killed process held: {} (after the kill: p50 {:?}, max {:?})",
        tally.kills.len(),
        takeovers.len(),
        percentile(&takeovers, 0.50),
        takeovers.last().copied().unwrap_or_default()
    );
    println!(
        "  takeover:               {} of {} kills left queued work; taken over after p50 {:?}, max {:?}",
        detected.len(),
        tally.kills.len(),
        percentile(&detected, 0.50),
        detected.last().copied().unwrap_or_default()
    );
}
