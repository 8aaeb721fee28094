//! No secret reaches the logs: the real `switchboard run` binary, with Telegram,
//! Discord and an API key configured and `RUST_LOG=trace` (the most a user can
//! ask for), answers on both platforms through rate limits and a model error;
//! its whole stderr must not contain the bot tokens or the API key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::process::Stdio;
use std::time::Duration;

use support::fake_discord::{FakeDiscord, UserMessage, TOKEN as DISCORD_TOKEN};
use support::fake_llm::{error_body, FakeLlm, Reply};
use support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN as TELEGRAM_TOKEN};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

const API_KEY: &str = "sk-live-LOGLEAK-5b2f0c9e7d";
const DM_CHANNEL: u64 = 4_242;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_the_logs_even_at_trace_level() {
    let llm = FakeLlm::start().await;
    llm.require_api_key(API_KEY);
    // A model error first (logged with its context), then answers.
    llm.push(Reply::status(
        500,
        error_body("upstream exploded", "server_error", None),
    ));
    llm.push(Reply::status(
        500,
        error_body("upstream exploded", "server_error", None),
    ));
    llm.push(Reply::status(
        500,
        error_body("upstream exploded", "server_error", None),
    ));
    for _ in 0..4 {
        llm.push(Reply::text("Hello from the model."));
    }
    let tg = FakeTelegram::start_lenient().await.unwrap();
    let discord = FakeDiscord::start().await;
    discord.add_dm(DM_CHANNEL);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("run")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .env("RUST_LOG", "trace")
        .env("LLM_BASE_URL", llm.base_url())
        .env("LLM_MODEL", "fake-model")
        .env("LLM_API_KEY", API_KEY)
        .env("DATA_DIR", data.display().to_string())
        .env(
            "DATABASE_URL",
            format!("sqlite://{}", data.join("switchboard.db").display()),
        )
        .env("ACCESS_POLICY", "open")
        .env("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN)
        .env("TELEGRAM_API_URL", tg.api_url())
        .env("DISCORD_BOT_TOKEN", DISCORD_TOKEN)
        .env("DISCORD_API_URL", &discord.api_url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let logs = tokio::spawn(async move {
        let mut all = Vec::new();
        let _ = stderr.read_to_end(&mut all).await;
        all
    });

    let ann = FakeUser::new(700, "Ann");
    // The first answer fails at the model (three 500s) and is explained.
    tg.message(Where::Dm, &ann, "hello?");
    assert!(
        tg.wait_until(WAIT, |t| !t.bot_messages(700).is_empty())
            .await,
        "no answer on Telegram"
    );
    // A 429 on the next answer is waited out.
    tg.fail_with_429(700, 1, 1);
    tg.message(Where::Dm, &ann, "hello again");
    assert!(
        tg.wait_until(WAIT, |t| t
            .bot_messages(700)
            .iter()
            .any(|m| m.text == "Hello from the model."))
            .await,
        "no second answer on Telegram"
    );

    assert!(
        discord.wait_ready(1).await,
        "the Discord shard never became ready"
    );
    discord.rate_limit_channel(DM_CHANNEL, 1, 0.5);
    discord
        .send_message(UserMessage::new(DM_CHANNEL, 701, "hello from discord"))
        .expect("shard connected");
    assert!(
        discord
            .wait_for(|d| d
                .bot_messages(DM_CHANNEL)
                .iter()
                .any(|m| m["content"] == "Hello from the model."))
            .await,
        "no answer on Discord"
    );

    // SIGTERM: a clean stop also logs (shutdown, adapters closing).
    let pid = child.id().unwrap();
    let _ = Command::new("kill")
        .arg(pid.to_string())
        .status()
        .await
        .unwrap();
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the gateway stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let logs = String::from_utf8_lossy(&logs.await.unwrap()).into_owned();
    assert!(
        logs.lines().count() > 100,
        "trace logging really was on ({} lines)",
        logs.lines().count()
    );
    let telegram_secret = TELEGRAM_TOKEN.split(':').nth(1).unwrap();
    let discord_secret = DISCORD_TOKEN;
    for (name, secret) in [
        ("Telegram token", telegram_secret),
        ("Discord token", discord_secret),
        ("API key", API_KEY),
    ] {
        if let Some(line) = logs.lines().find(|l| l.contains(secret)) {
            panic!("the {name} reached the logs: {line}");
        }
    }
}
