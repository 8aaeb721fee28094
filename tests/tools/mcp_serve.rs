//! `switchboard mcp` driven by an independent client — the official Python
//! SDK (`tests/mcp/python_client.py`) — against a running gateway on the
//! fake Telegram Bot API: `notify` posts to the operator's group,
//! `request_approval` shows a card that a non-approver cannot decide and an
//! approver decides after the gateway restarted in between (asking again with
//! the same request id returns the same decision, no second card), `ask`
//! returns the reply to its question, and the read-only tools list what
//! happened. The client cannot choose the chat.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::mcp::mcp;
use crate::support;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use support::fake_llm::{FakeLlm, FAKE_MODEL};
use support::fake_telegram::{FakeTelegram, FakeUser, StoredMessage, Where, TOKEN};
use switchboard::{Config, Running};
use switchboard_platform::{PlatformAdapter, Quota};
use switchboard_telegram::{TelegramAdapter, TelegramLimits};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

pub(crate) const WAIT: Duration = Duration::from_secs(30);
pub(crate) const GROUP: i64 = -100_777;

pub(crate) fn vars(llm: &FakeLlm, tg: &FakeTelegram, dir: &Path) -> HashMap<&'static str, String> {
    HashMap::from([
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", FAKE_MODEL.to_owned()),
        ("DATA_DIR", dir.display().to_string()),
        (
            "DATABASE_URL",
            format!("sqlite://{}", dir.join("switchboard.db").display()),
        ),
        ("ACCESS_POLICY", "allowlist".to_owned()),
        ("TELEGRAM_ALLOWED_USERS", "900,901".to_owned()),
        ("TELEGRAM_APPROVERS", "900".to_owned()),
        ("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()),
        ("TELEGRAM_API_URL", tg.api_url()),
        ("MCP_NOTIFY_CHAT", format!("telegram:{GROUP}")),
    ])
}

pub(crate) async fn gateway(vars: &HashMap<&'static str, String>) -> (Running, CancellationToken) {
    let config = Config::from_lookup(|k| vars.get(k).cloned()).unwrap();
    let mut tcfg = config.platforms.telegram.clone().expect("Telegram enabled");
    tcfg.poll_timeout_secs = 1;
    let fast = |n| Quota::per_second(NonZeroU32::new(n).unwrap());
    tcfg.limits = TelegramLimits {
        per_chat: fast(50),
        per_group: fast(1_000),
        per_bot: fast(1_000),
    };
    let adapter = Arc::new(TelegramAdapter::connect(tcfg).await.unwrap());
    let shutdown = CancellationToken::new();
    let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![adapter];
    let running = switchboard::start(&config, adapters, shutdown.clone())
        .await
        .unwrap();
    (running, shutdown)
}

/// The Python SDK client: running `switchboard mcp` over stdio, or connected
/// to one over Streamable HTTP.
pub(crate) struct Client {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    _child: tokio::process::Child,
}

impl Client {
    /// The client starting `switchboard mcp` over stdio itself.
    fn start(vars: &HashMap<&'static str, String>, dir: &Path) -> Client {
        Client::start_with(vars, dir, &[])
    }

    /// [`Client::start`] with `extra` variables for `switchboard mcp`.
    pub(crate) fn start_with(
        vars: &HashMap<&'static str, String>,
        dir: &Path,
        extra: &[(&str, &str)],
    ) -> Client {
        let mut command = python_client();
        command.envs(extra.iter().copied());
        command
            .env("SWITCHBOARD_BIN", env!("CARGO_BIN_EXE_switchboard"))
            .env("DATABASE_URL", &vars["DATABASE_URL"])
            .env("DATA_DIR", &vars["DATA_DIR"])
            .env(
                "MCP_NOTIFY_CHAT",
                vars.get("MCP_NOTIFY_CHAT").map_or("", |v| v),
            )
            .env("APPROVAL_TIMEOUT", "300")
            .current_dir(dir);
        Client::spawn(command)
    }

    /// The client connecting over Streamable HTTP to `url` with `token`.
    pub(crate) fn connect(url: &str, token: &str, dir: &Path) -> Client {
        let mut command = python_client();
        command
            .env("MCP_URL", url)
            .env("MCP_TOKEN", token)
            .current_dir(dir);
        Client::spawn(command)
    }

    fn spawn(mut command: tokio::process::Command) -> Client {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Client {
            stdin: child.stdin.take().unwrap(),
            lines: BufReader::new(child.stdout.take().unwrap()).lines(),
            _child: child,
        }
    }

    pub(crate) async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("the MCP client answered in time")
            .unwrap()
            .expect("the MCP client is still running");
        serde_json::from_str(&line).unwrap()
    }

    pub(crate) async fn send(&mut self, call: &str, args: Value) {
        let line = json!({"call": call, "args": args}).to_string() + "\n";
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    pub(crate) async fn call(&mut self, call: &str, args: Value) -> Value {
        self.send(call, args).await;
        self.next().await
    }
}

/// `python_client.py` under the SDK's interpreter, with an empty environment.
fn python_client() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(mcp().python());
    command
        .arg(mcp().python_script("python_client.py"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    command
}

pub(crate) fn bot_message(tg: &FakeTelegram, needle: &str) -> Option<StoredMessage> {
    tg.bot_messages(GROUP)
        .into_iter()
        .find(|m| m.text.contains(needle))
}

pub(crate) async fn wait_for(tg: &FakeTelegram, needle: &str) -> StoredMessage {
    assert!(
        tg.wait_until(WAIT, |t| bot_message(t, needle).is_some())
            .await,
        "no bot message containing {needle:?}: {:?}",
        tg.bot_messages(GROUP)
            .iter()
            .map(|m| &m.text)
            .collect::<Vec<_>>()
    );
    bot_message(tg, needle).unwrap()
}

pub(crate) fn button(card: &StoredMessage, suffix: &str) -> String {
    let markup = card.reply_markup.as_ref().expect("card has a keyboard");
    markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().into_iter().flatten())
        .filter_map(|b| b["callback_data"].as_str())
        .find(|d| d.ends_with(suffix))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no button ending in {suffix}: {markup}"))
}

#[tokio::test]
async fn an_external_agent_notifies_asks_and_gets_a_durable_approval_through_the_chat() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vars = vars(&llm, &tg, dir.path());
    let ann = FakeUser::new(900, "Ann");
    let bob = FakeUser::new(901, "Bob");
    tg.ensure_chat(Where::Group(GROUP), &ann);
    let (running, shutdown) = gateway(&vars).await;

    let mut client = Client::start(&vars, dir.path());
    let hello = client.next().await;
    assert_eq!(hello["server"], "switchboard");
    assert_eq!(
        hello["tools"],
        json!([
            "ask",
            "list_tasks",
            "notify",
            "recent_events",
            "request_approval"
        ])
    );

    // notify: posted in the operator's group; the client cannot pick another chat.
    let sent = client
        .call("notify", json!({"text": "Build 42 finished"}))
        .await;
    assert_eq!(sent["isError"], false, "{sent}");
    assert_eq!(sent["structured"]["status"], "sent", "{sent}");
    wait_for(&tg, "Build 42 finished").await;
    let refused = client
        .call("notify", json!({"text": "hi", "to": "telegram:900"}))
        .await;
    assert_eq!(refused["isError"], true);

    // request_approval: a card in the group, only Allow once / Deny.
    client
        .send(
            "request_approval",
            json!({"action": "Deploy v2 to production", "details": "kubectl rollout restart deploy/web",
                   "request_id": "deploy-v2", "timeout_secs": 300}),
        )
        .await;
    let card = wait_for(&tg, "Deploy v2 to production").await;
    assert!(
        card.text.contains("Only an approver can decide"),
        "{}",
        card.text
    );
    let allow = button(&card, ":y");
    assert!(
        card.reply_markup
            .as_ref()
            .unwrap()
            .to_string()
            .matches("callback_data")
            .count()
            == 2,
        "{:?}",
        card.reply_markup
    );
    // Bob is allowed in but is no approver: his press decides nothing.
    tg.callback(Where::Group(GROUP), &bob, card.message_id, &allow);
    assert!(
        tg.wait_until(WAIT, |t| t
            .calls_to("answerCallbackQuery")
            .iter()
            .any(|c| c.params.to_string().contains("Only the person who asked")))
            .await,
        "the non-approver's press was not refused"
    );

    // The gateway restarts while the client waits.
    shutdown.cancel();
    tokio::time::timeout(WAIT, running.wait()).await.unwrap();
    let (running, shutdown) = gateway(&vars).await;
    tg.callback(Where::Group(GROUP), &ann, card.message_id, &allow);
    let decided = client.next().await;
    assert_eq!(decided["isError"], false, "{decided}");
    assert_eq!(decided["structured"]["decision"], "approved", "{decided}");
    assert_eq!(decided["structured"]["decided_by"], "Ann", "{decided}");
    assert_eq!(decided["structured"]["decided_by_id"], 900, "{decided}");
    assert!(
        tg.wait_until(WAIT, |t| t.stored(GROUP, card.message_id).is_some_and(
            |m| m.reply_markup.is_none() && m.text.contains("Allowed once")
        ))
        .await,
        "the card was not edited to its decision"
    );
    // Asking again with the same request id: the same decision, no second card.
    let again = client
        .call(
            "request_approval",
            json!({"action": "Deploy v2 to production", "request_id": "deploy-v2"}),
        )
        .await;
    assert_eq!(again["structured"]["decision"], "approved", "{again}");
    let cards = tg
        .bot_messages(GROUP)
        .iter()
        .filter(|m| m.text.contains("Deploy v2 to production"))
        .count();
    assert_eq!(cards, 1);

    // ask: the reply to the question is the answer; other chatter is not.
    client
        .send("ask", json!({"question": "Which branch should I release?"}))
        .await;
    let question = wait_for(&tg, "Which branch should I release?").await;
    tg.reply(
        Where::Group(GROUP),
        &bob,
        "release/2.0",
        question.message_id,
    );
    let answer = client.next().await;
    assert_eq!(answer["structured"]["status"], "answered", "{answer}");
    assert_eq!(answer["structured"]["answer"], "release/2.0");
    assert_eq!(answer["structured"]["answered_by"], "Bob");
    wait_for(&tg, "Passed on to the agent that asked").await;
    assert!(
        llm.requests().await.is_empty(),
        "an answer to an MCP question ran a turn"
    );

    // The read-only tools see what happened.
    let events = client
        .call("recent_events", json!({"kind": "mcp.", "limit": 10}))
        .await;
    let kinds: Vec<&str> = events["structured"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    for kind in [
        "mcp.notify",
        "mcp.approval_requested",
        "mcp.ask",
        "mcp.answered",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    let tasks = client.call("list_tasks", json!({"limit": 5})).await;
    assert_eq!(tasks["structured"]["tasks"], json!([]));

    shutdown.cancel();
    tokio::time::timeout(WAIT, running.wait()).await.unwrap();
}

#[tokio::test]
async fn without_a_target_chat_the_chat_tools_say_so_and_nothing_is_queued() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut vars = vars(&llm, &tg, dir.path());
    vars.remove("MCP_NOTIFY_CHAT");
    let mut client = Client::start(&vars, dir.path());
    client.next().await;
    let answer = client.call("ask", json!({"question": "anyone?"})).await;
    assert_eq!(answer["isError"], true);
    assert!(
        answer["text"][0]
            .as_str()
            .unwrap()
            .contains("MCP_NOTIFY_CHAT"),
        "{answer}"
    );
}
