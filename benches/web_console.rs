//! The web console's cost: server time of the overview and of a 500-message
//! conversation page, and the idle resident memory it adds.
//!
//! `cargo bench --bench web_console` (SQLite; also PostgreSQL when
//! `TEST_DATABASE_URL` is set).
//!
//! 1. Render time: the real core with the in-memory test channel and the web
//!    console on 127.0.0.1, a database seeded with 200 sessions, a
//!    500-message conversation (Markdown, tool calls with arguments, tool
//!    results), 50 tasks and 2,000 audit events. A signed-in client fetches
//!    `/` and `/conversations/{id}?per=500` (all 500 messages on one page)
//!    200 times each after 20 warm-ups; the time is request → last byte over
//!    loopback (the server's work plus a local round trip).
//! 2. Idle RSS: this binary started as a child with the console off and on
//!    (3 runs each, alternating); each child starts the gateway, serves one
//!    overview when the console is on, idles 5 s and reports `VmRSS`.
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

use reqwest::header::{COOKIE, SET_COOKIE};
use stats::{ms, pct};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::fake_llm::FakeLlm;
use support::postgres::fresh_postgres;
use support::test_channel::TestChannel;
use switchboard::llm::{Message, ToolCall};
use switchboard::store::{SessionKey, Store};
use switchboard::Running;
use switchboard_platform::{ChatId, Platform, PlatformAdapter, UserId};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "bench-console-token-0123456789";
const ROUNDS: usize = 200;
const WARMUP: usize = 20;

async fn start(llm: &FakeLlm, url: &str, dir: &Path, web: bool) -> (Running, CancellationToken) {
    let mut vars: HashMap<&str, String> = [
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "fake-model".to_owned()),
        ("DATA_DIR", dir.join("data").display().to_string()),
        ("DATABASE_URL", url.to_owned()),
        ("WORKSPACE_DIR", dir.join("ws").display().to_string()),
        ("ACCESS_POLICY", "open".to_owned()),
        ("MEMORY_ENABLED", "false".to_owned()),
    ]
    .into_iter()
    .collect();
    if web {
        vars.insert("WEB_LISTEN", "127.0.0.1:0".to_owned());
        vars.insert("WEB_TOKEN", TOKEN.to_owned());
    }
    let config = switchboard::Config::from_lookup(|k| vars.get(k).cloned()).expect("config");
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![TestChannel::new()];
    let running = switchboard::start(&config, adapters, shutdown.clone())
        .await
        .expect("switchboard starts");
    (running, shutdown)
}

fn key(user: i64) -> SessionKey {
    SessionKey {
        platform: Platform::Telegram,
        chat: ChatId(user),
        thread: None,
        user: UserId(user),
    }
}

/// Seeds the database; returns the 500-message session's id.
async fn seed(store: &Store) -> String {
    for user in 0..200 {
        let s = store.sessions().open(&key(10_000 + user)).await.unwrap();
        store
            .history()
            .append(&s, &[Message::user("hi"), Message::assistant("hello")])
            .await
            .unwrap();
    }
    for i in 0..2_000 {
        store
            .audit()
            .record(
                "bench.event",
                serde_json::json!({ "i": i, "note": "seeded" }),
            )
            .await;
    }
    let session = store.sessions().open(&key(1)).await.unwrap();
    let mut messages = Vec::with_capacity(500);
    for i in 0..125 {
        messages.push(Message::user(format!(
            "Question {i}: could you **check** the `build` and list:\n\n- item one\n- item <two>\n\n[docs](https://example.com/{i})"
        )));
        let mut call = Message::assistant(format!("Let me look ({i})."));
        call.tool_calls = vec![ToolCall {
            id: format!("call_{i}"),
            name: "exec_command".into(),
            arguments: format!(
                r#"{{"command":"cargo build --release -p crate{i} 2>&1 | tail -n 40","headers":{{"Authorization":"Bearer sk-bench-{i:08}"}}}}"#
            ),
        }];
        messages.push(call);
        messages.push(Message::tool_result(
            format!("call_{i}"),
            "exit code: 0\noutput:\n".to_owned() + &"   Compiling something v0.1.0\n".repeat(15),
        ));
        messages.push(Message::assistant(format!(
            "The build **passed** for crate {i}.\n\n| step | time |\n| --- | --- |\n| build | 12 s |"
        )));
    }
    store.history().append(&session, &messages).await.unwrap();
    session.into_string()
}

async fn sign_in(base: &str, client: &reqwest::Client) -> String {
    let page = client.get(format!("{base}/login")).send().await.unwrap();
    let cookie = page.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let body = page.text().await.unwrap();
    let csrf = body
        .split("name=\"_csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let done = client
        .post(format!("{base}/login"))
        .header(COOKIE, &cookie)
        .form(&[("token", TOKEN), ("_csrf", &csrf)])
        .send()
        .await
        .unwrap();
    done.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

async fn time_page(
    client: &reqwest::Client,
    url: &str,
    cookie: &str,
    expect: &str,
) -> Vec<Duration> {
    let mut times = Vec::with_capacity(ROUNDS);
    for round in 0..WARMUP + ROUNDS {
        let started = Instant::now();
        let response = client.get(url).header(COOKIE, cookie).send().await.unwrap();
        assert!(
            response.status().is_success(),
            "{url}: {}",
            response.status()
        );
        let body = response.text().await.unwrap();
        let took = started.elapsed();
        assert!(body.contains(expect), "{url} lacks {expect:?}");
        if round >= WARMUP {
            times.push(took);
        }
    }
    times.sort();
    times
}

async fn render_times(name: &str, url: &str) {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = url.replace("{dir}", &dir.path().display().to_string());
    let (running, shutdown) = start(&llm, &url, dir.path(), true).await;
    let session = seed(&running.store).await;
    let base = format!("http://{}", running.web_addr.unwrap());
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let cookie = sign_in(&base, &client).await;
    let overview = time_page(&client, &format!("{base}/"), &cookie, "Processes sharing").await;
    let convo_url = format!("{base}/conversations/{session}?per=500");
    let convo = time_page(
        &client,
        &convo_url,
        &cookie,
        "The build <strong>passed</strong> for crate 124",
    )
    .await;
    let size = client
        .get(&convo_url)
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .len();
    for (what, t) in [
        ("overview", &overview),
        ("500-message conversation", &convo),
    ] {
        println!(
            "{name}: {what}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({ROUNDS} requests)",
            ms(pct(t, 50.0)),
            ms(pct(t, 99.0)),
            ms(*t.last().unwrap())
        );
    }
    println!("{name}: the conversation page is {} KB", size / 1024);
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), running.wait()).await;
}

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

/// The child of the RSS part: prints `rss <MB>` after idling.
async fn rss_child(web: bool) {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}",
        dir.path().join("data/switchboard.db").display()
    );
    let (running, shutdown) = start(&llm, &url, dir.path(), web).await;
    if let Some(addr) = running.web_addr {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let base = format!("http://{addr}");
        let cookie = sign_in(&base, &client).await;
        let page = client
            .get(format!("{base}/"))
            .header(COOKIE, cookie)
            .send()
            .await
            .unwrap();
        assert!(page.status().is_success());
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!("rss {:.2}", rss_mb());
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), running.wait()).await;
}

fn child_rss(web: bool) -> f64 {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("rss-child")
        .arg(if web { "on" } else { "off" })
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("rss "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("the child reported no RSS: {text}"))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("rss-child") {
        rss_child(args.get(1).map(String::as_str) == Some("on")).await;
        return;
    }
    println!(
        "Switchboard web console bench ({} CPUs)",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    render_times("SQLite", "sqlite://{dir}/data/switchboard.db").await;
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        let url = fresh_postgres(&admin).await;
        render_times("PostgreSQL", &url).await;
    }
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        off.push(child_rss(false));
        on.push(child_rss(true));
    }
    off.sort_by(f64::total_cmp);
    on.sort_by(f64::total_cmp);
    println!(
        "idle RSS: console off {:.1} MB, on {:.1} MB (medians of 3; runs off {off:?}, on {on:?}): +{:.2} MB",
        off[1],
        on[1],
        on[1] - off[1]
    );
}
