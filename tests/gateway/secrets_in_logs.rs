//! No secret reaches the logs, the model, the history, the traces or the chat.
//!
//! The real `switchboard run` binary, with Telegram, Discord and an API key
//! configured and `RUST_LOG=trace` (the most a user can ask for), answers on
//! both platforms through rate limits and a model error; its whole stderr must
//! not contain the bot tokens or the API key. A password in `LLM_BASE_URL` is
//! not logged either. In process: a command's output and a model's echo of the
//! key show `[REDACTED]` everywhere. And a command the operator approved cannot
//! read the gateway's environment through `/proc/$PPID/environ`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use support::e2e::{files_under, tool_result, Harness};
use support::fake_discord::{FakeDiscord, UserMessage, TOKEN as DISCORD_TOKEN};
use support::fake_llm::{chunk, error_body, FakeLlm, Reply};
use support::fake_telegram::{FakeTelegram, FakeUser, Where, TOKEN as TELEGRAM_TOKEN};
use support::test_channel::{Log, Op};
use switchboard_platform::PressAnswer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// Every text the chat was ever shown: sends, edits and press answers.
fn everything_shown(log: &Log) -> Vec<String> {
    log.ops
        .iter()
        .filter_map(|op| match op {
            Op::Send { text, .. } | Op::Edit { text, .. } => Some(text.clone()),
            Op::Answer {
                answer: PressAnswer::Update(m),
                ..
            } => Some(m.text.clone()),
            Op::Answer {
                answer: PressAnswer::Private(t),
                ..
            } => Some(t.clone()),
            _ => None,
        })
        .collect()
}

const KEY: &str = "sk-live-PRINTED-71c3a09e55";
const FALLBACK_KEY: &str = "sk-fallback-PRINTED-0d4e2b";

#[tokio::test]
async fn an_approved_command_printing_the_key_shows_redacted_to_the_model_history_traces_and_chat()
{
    let llm = FakeLlm::start().await;
    let base = llm.base_url();
    let h = Harness::with_llm(
        &[
            ("LLM_API_KEY", KEY),
            ("LLM_FALLBACK_1_BASE_URL", base.as_str()),
            ("LLM_FALLBACK_1_MODEL", "fake-model"),
            ("LLM_FALLBACK_1_API_KEY", FALLBACK_KEY),
        ],
        llm,
    )
    .await;
    // What `tr '\0' '\n' < /proc/$PPID/environ` printed before the fix.
    h.write(
        "environ.txt",
        &format!(
            "LLM_MODEL=fake-model\nLLM_API_KEY={KEY}\nLLM_FALLBACK_1_API_KEY={FALLBACK_KEY}\n"
        ),
    );
    h.llm.set_responder(|request| {
        let last = request["messages"]
            .as_array()
            .and_then(|m| m.last().cloned())
            .unwrap_or_default();
        if last["role"] == "tool" {
            // The model quotes what the tool said.
            let said = last["content"].as_str().unwrap_or_default().to_owned();
            Reply::text(&format!("The command printed: {said}"))
        } else {
            Reply::tool_calls([(
                "call_env",
                "exec_command",
                json!({"command": "cat environ.txt"}),
            )])
        }
    });
    h.channel.dm(1, "show me the environment").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.any_contains("The command printed:"))
        .await;
    h.idle().await;

    let requests = h.requests(2).await;
    let result = tool_result(&requests[1], "call_env");
    assert!(result.contains("LLM_MODEL=fake-model"), "{result}");
    assert!(
        result.contains("LLM_API_KEY=[REDACTED]")
            && result.contains("LLM_FALLBACK_1_API_KEY=[REDACTED]"),
        "the model sees the output with the keys redacted: {result}"
    );
    let session = h.session(1, 1).await;
    let history = h
        .running
        .store
        .history()
        .recent(&session, 100)
        .await
        .unwrap();
    let history = serde_json::to_string(&history).unwrap();
    assert!(history.contains("[REDACTED]"), "{history}");
    let traces: Vec<String> = files_under(&h.data_dir().join("scratchpad"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(!traces.is_empty(), "the turn was traced");
    assert!(
        traces.iter().any(|t| t.contains("LLM_API_KEY=[REDACTED]")),
        "{traces:?}"
    );
    let log = h.channel.log();
    let shown = everything_shown(&log);
    assert!(
        shown.iter().any(|t| t.contains("LLM_API_KEY=[REDACTED]")),
        "{log}"
    );
    for (what, text) in [
        ("the model", requests.iter().map(Value::to_string).collect()),
        ("the history", history),
        ("a trace", traces.concat()),
        ("the chat", shown.concat()),
    ] {
        for key in [KEY, FALLBACK_KEY] {
            assert!(!text.contains(key), "{what} got the key {key}: {text}");
        }
    }
}

#[tokio::test]
async fn a_key_the_model_echoes_shows_redacted_in_the_chat_even_split_across_deltas() {
    let key = "sk-live-ECHOED-9a7b3c1d2e";
    let h = Harness::with(&[("LLM_API_KEY", key)]).await;
    // An endpoint that echoes the key it was sent, cut mid-key: the chat's
    // draft is edited after every delta (no edit interval on this channel).
    let (head, tail) = key.split_at(10);
    h.llm.push(
        Reply::chunks(vec![
            chunk(
                json!({"role": "assistant", "content": "Your key is "}),
                None,
            ),
            chunk(json!({"content": head}), None),
            chunk(json!({"content": tail}), None),
            chunk(json!({"content": " — keep it safe."}), Some("stop")),
        ])
        .with_chunk_delay(Duration::from_millis(150)),
    );
    h.channel.dm(1, "what is your key?").await;
    h.wait_for("the answer", |l| l.any_contains("keep it safe"))
        .await;
    h.idle().await;

    let log = h.channel.log();
    assert!(
        log.has_text("Your key is [REDACTED] — keep it safe."),
        "{log}"
    );
    let shown = everything_shown(&log);
    assert!(shown.len() >= 2, "the answer streamed into a draft: {log}");
    for text in &shown {
        assert!(
            !text.contains(head),
            "the chat showed part of the key: {text:?}\n{log}"
        );
    }
    let session = h.session(1, 1).await;
    let history = h
        .running
        .store
        .history()
        .recent(&session, 100)
        .await
        .unwrap();
    let history = serde_json::to_string(&history).unwrap();
    assert!(!history.contains(key), "{history}");
}

#[tokio::test]
async fn a_tool_call_carrying_the_key_runs_with_it_redacted() {
    let key = "sk-live-EXFIL-55d0c2a8b4";
    let h = Harness::with(&[("LLM_API_KEY", key)]).await;
    // A model that got hold of the key tries to send it out through a tool.
    h.llm.push(Reply::tool_calls([(
        "call_out",
        "exec_command",
        json!({"command": format!("echo {key} > out.txt")}),
    )]));
    h.llm.push(Reply::text("Sent."));
    h.channel.dm(1, "do it").await;
    let card = h.channel.card().await;
    assert!(card.text.contains("[REDACTED]"), "{}", card.text);
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Sent.")).await;
    h.idle().await;

    let written = std::fs::read_to_string(h.workspace().join("out.txt")).unwrap();
    assert_eq!(written, "[REDACTED]\n", "the command ran without the key");
    let session = h.session(1, 1).await;
    let history = h
        .running
        .store
        .history()
        .recent(&session, 100)
        .await
        .unwrap();
    let history = serde_json::to_string(&history).unwrap();
    assert!(!history.contains(key), "{history}");
}

/// A temp dir any user may write (the gateway may run as `nobody`).
fn open_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// `switchboard chat` on piped `input`, with only `vars` (and `PATH`) set;
/// as `nobody` when the test runs as root, since root may read any process's
/// `/proc` files whatever it does. Returns (exit ok, stdout, its logs: stderr
/// and `DATA_DIR/chat.log`, where `chat` writes them).
async fn chat(
    dir: &std::path::Path,
    vars: &[(&str, String)],
    input: &str,
) -> (bool, String, String) {
    let bin = env!("CARGO_BIN_EXE_switchboard");
    let mut cmd = if rustix::process::geteuid().is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    cmd.arg("chat")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .current_dir(dir)
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("chat ends at end of input")
        .unwrap();
    let data = vars
        .iter()
        .find(|(k, _)| *k == "DATA_DIR")
        .map(|(_, v)| std::path::PathBuf::from(v))
        .expect("chat runs with DATA_DIR");
    let logged = std::fs::read_to_string(data.join("chat.log")).unwrap_or_default();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        format!("{}{logged}", String::from_utf8_lossy(&out.stderr)),
    )
}

/// The variables of a `chat` run in `dir` against `base_url`.
fn chat_vars(dir: &std::path::Path, base_url: String) -> Vec<(&'static str, String)> {
    let data = dir.join("data");
    vec![
        ("LLM_BASE_URL", base_url),
        ("LLM_MODEL", "fake-model".into()),
        ("DATA_DIR", data.display().to_string()),
        (
            "DATABASE_URL",
            format!("sqlite://{}", data.join("switchboard.db").display()),
        ),
        ("WORKSPACE_DIR", dir.join("ws").display().to_string()),
        ("APPROVAL_TIMEOUT", "60".into()),
    ]
}

#[tokio::test]
async fn the_password_in_llm_base_url_is_not_logged_even_at_trace_level() {
    let password = "pw-in-the-URL-6e1f0a";
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("Hello from the fallback."));
    // The primary is down (a network error names the request URL); the
    // fallback answers. Both URLs carry the password.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let primary = format!("http://operator:{password}@127.0.0.1:{dead_port}/v1");
    let fallback = llm
        .base_url()
        .replacen("http://", &format!("http://operator:{password}@"), 1);
    let dir = open_dir();
    let mut vars = chat_vars(dir.path(), primary);
    vars.extend([
        ("RUST_LOG", "trace".to_owned()),
        ("LLM_FALLBACK_1_BASE_URL", fallback),
        ("LLM_FALLBACK_1_MODEL", "fake-model".to_owned()),
    ]);
    let (ok, stdout, stderr) = chat(dir.path(), &vars, "hello\n").await;

    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Hello from the fallback."),
        "{stdout}\n{stderr}"
    );
    for (what, text) in [("the logs", &stderr), ("the chat", &stdout)] {
        if let Some(line) = text.lines().find(|l| l.contains(password)) {
            panic!("the password reached {what}: {line}");
        }
    }
    assert!(
        stderr.contains("sending chat request") && stderr.contains("operator:redacted@127.0.0.1"),
        "trace logging was on and named the endpoint: {stderr}"
    );
}

#[tokio::test]
async fn a_command_cannot_read_the_gateways_environment_nor_show_its_key() {
    let key = "sk-live-ENVIRON-4f2a9d8c61";
    let llm = FakeLlm::start().await;
    llm.require_api_key(key);
    llm.set_responder(|request| {
        let last = request["messages"]
            .as_array()
            .and_then(|m| m.last().cloned())
            .unwrap_or_default();
        if last["role"] == "tool" {
            let said = last["content"].as_str().unwrap_or_default().to_owned();
            Reply::text(&format!("Done. Tool said: {said}"))
        } else {
            Reply::tool_calls([(
                "call_environ",
                "exec_command",
                json!({"command": "tr '\\0' '\\n' < /proc/$PPID/environ; echo; grep -c . /proc/$PPID/mem"}),
            )])
        }
    });
    let dir = open_dir();
    let mut vars = chat_vars(dir.path(), llm.base_url());
    vars.push(("LLM_API_KEY", key.to_owned()));
    let (ok, stdout, stderr) = chat(dir.path(), &vars, "show the environment\ny\n").await;

    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("Done. Tool said:"), "{stdout}\n{stderr}");
    let requests = llm.requests().await;
    let result = requests
        .iter()
        .find_map(|r| {
            r["messages"]
                .as_array()?
                .iter()
                .find(|m| m["tool_call_id"] == "call_environ")
                .and_then(|m| m["content"].as_str().map(str::to_owned))
        })
        .expect("the command ran and its result reached the model");
    assert!(
        !result.contains("LLM_MODEL=") && !result.contains("LLM_BASE_URL="),
        "the command read the gateway's environment: {result}"
    );
    for (what, text) in [
        ("the model", requests.iter().map(Value::to_string).collect()),
        ("the chat", stdout),
        ("the logs", stderr),
    ] {
        assert!(!text.contains(key), "{what} got the key: {text}");
    }
}
