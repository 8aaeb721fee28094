//! The real `switchboard` binary meeting a new user's mistakes: `doctor`
//! checks what breaks later (bot tokens against the fake Telegram and Discord,
//! missing tool and skill paths, unusable directories) and lists every problem;
//! model endpoint errors name the URL requested; `DATA_DIR` is named when it
//! is the cause.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use support::fake_discord::{FakeDiscord, TOKEN as DISCORD_TOKEN};
use support::fake_llm::{FakeLlm, Reply};
use support::fake_telegram::{FakeTelegram, TOKEN as TELEGRAM_TOKEN};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// How long a command may run before the test calls it hung (a debug build
/// on a shared machine).
const HANG: Duration = Duration::from_secs(120);

/// The variables of one binary run, in a temp home; nothing inherited but `PATH`.
struct Env {
    dir: tempfile::TempDir,
    vars: Vec<(String, String)>,
}

struct Done {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Done {
    /// The `✘` line that mentions `needle`.
    fn failure(&self, needle: &str) -> &str {
        self.stdout
            .lines()
            .find(|l| l.starts_with('✘') && l.contains(needle))
            .unwrap_or_else(|| panic!("no ✘ line naming {needle}\n{self}"))
    }
}

impl Env {
    fn new(llm_base_url: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let vars = vec![
            ("LLM_BASE_URL".into(), llm_base_url.to_owned()),
            ("LLM_MODEL".into(), "fake-model".into()),
            (
                "DATA_DIR".into(),
                dir.path().join("data").display().to_string(),
            ),
            (
                "WORKSPACE_DIR".into(),
                dir.path().join("ws").display().to_string(),
            ),
        ];
        Env { dir, vars }
    }

    fn set(mut self, var: &str, value: &str) -> Env {
        self.vars.retain(|(k, _)| k != var);
        self.vars.push((var.to_owned(), value.to_owned()));
        self
    }

    /// Sets `var` to `rel` inside the temp home.
    fn set_path(self, var: &str, rel: &str) -> Env {
        let path = self.path(rel);
        self.set(var, &path)
    }

    fn path(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .envs(self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Runs to completion with `input` on stdin.
    async fn run_with(&self, args: &[&str], input: &str) -> Done {
        let mut child = self.command(args).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).await.unwrap();
        drop(stdin);
        let output = tokio::time::timeout(HANG, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("switchboard {args:?} hung"))
            .unwrap();
        Done {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    async fn run(&self, args: &[&str]) -> Done {
        self.run_with(args, "").await
    }
}

/// A port nobody listens on.
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// An HTTP server answering every request like Ollama does a path it does not
/// serve: 404 with the bare text `404 page not found`.
async fn plain_404_server() -> (String, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new()
        .fallback(|| async { (axum::http::StatusCode::NOT_FOUND, "404 page not found") });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), task)
}

// ---------------------------------------------------------------- doctor

#[tokio::test]
async fn doctor_lists_every_problem_each_naming_its_variable_and_fails() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("OK"));
    let telegram = FakeTelegram::start().await.unwrap();
    let discord = FakeDiscord::start().await;
    let env = Env::new(&llm.base_url());
    // DATA_DIR is a file; WORKSPACE_DIR would have to be created below one.
    std::fs::write(env.path("not-a-dir"), "x").unwrap();
    let env = env
        .set_path("DATA_DIR", "not-a-dir")
        .set_path("WORKSPACE_DIR", "not-a-dir/ws")
        .set_path("SKILLS_DIR", "my-skills")
        .set_path("SCRIPT_TOOLS_DIR", "my-scripts")
        .set_path("HTTP_TOOLS_FILE", "http-tools.json")
        .set("TELEGRAM_BOT_TOKEN", "7000001:AAwrongTOKEN_wrong-wrong")
        .set("TELEGRAM_API_URL", &telegram.api_url())
        .set("DISCORD_BOT_TOKEN", "wrong-discord.bot-token.999")
        .set("DISCORD_API_URL", &discord.api_url);
    let done = env.run(&["doctor"]).await;
    assert_eq!(done.code, Some(1), "{done}");
    for var in [
        "DATA_DIR",
        "WORKSPACE_DIR",
        "SKILLS_DIR",
        "SCRIPT_TOOLS_DIR",
        "HTTP_TOOLS_FILE",
        "TELEGRAM_BOT_TOKEN",
        "DISCORD_BOT_TOKEN",
    ] {
        done.failure(var);
    }
    assert!(done.failure("DATA_DIR (").contains("is not a directory"));
    assert!(done.failure("SCRIPT_TOOLS_DIR").contains("does not exist"));
    assert!(done.failure("TELEGRAM_BOT_TOKEN").contains("rejected"));
    assert!(done.failure("DISCORD_BOT_TOKEN").contains("401"));
    // The checks go on after a failure: the model was still asked.
    assert!(done.stdout.contains("✔ model endpoint answers"), "{done}");
    assert_eq!(llm.requests().await.len(), 1);
    // Each token was checked at the configured API URL, and not leaked.
    assert!(
        telegram
            .calls()
            .iter()
            .any(|c| c.method.eq_ignore_ascii_case("getMe")),
        "{:?}",
        telegram
            .calls()
            .iter()
            .map(|c| &c.method)
            .collect::<Vec<_>>()
    );
    assert!(
        discord
            .calls()
            .iter()
            .any(|c| c.path.ends_with("/users/@me")),
        "{:?}",
        discord.calls().iter().map(|c| &c.path).collect::<Vec<_>>()
    );
    for secret in ["AAwrongTOKEN_wrong-wrong", "wrong-discord.bot-token.999"] {
        assert!(
            !done.stdout.contains(secret) && !done.stderr.contains(secret),
            "{done}"
        );
    }
}

#[tokio::test]
async fn doctor_accepts_working_bot_tokens_and_existing_paths() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("OK"));
    let telegram = FakeTelegram::start().await.unwrap();
    let discord = FakeDiscord::start().await;
    let env = Env::new(&llm.base_url());
    std::fs::create_dir(env.path("my-skills")).unwrap();
    std::fs::create_dir(env.path("my-scripts")).unwrap();
    std::fs::write(env.path("http-tools.json"), r#"{"tools": []}"#).unwrap();
    let env = env
        .set_path("SKILLS_DIR", "my-skills")
        .set_path("SCRIPT_TOOLS_DIR", "my-scripts")
        .set_path("HTTP_TOOLS_FILE", "http-tools.json")
        .set("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN)
        .set("TELEGRAM_API_URL", &telegram.api_url())
        .set("DISCORD_BOT_TOKEN", DISCORD_TOKEN)
        .set("DISCORD_API_URL", &discord.api_url)
        .set("WEB_LISTEN", "127.0.0.1:9480")
        .set("MCP_LISTEN", "127.0.0.1:9481")
        .set("MCP_TOKEN", "mcp-doctor-token-7f3a91")
        .set("TOOL_BUILDERS", "all")
        .set("MCP_SERVER_TOOLS", "data")
        .set("MCP_SERVER_USER", "telegram:900");
    let done = env.run(&["doctor"]).await;
    assert_eq!(done.code, Some(0), "{done}");
    assert!(!done.stdout.contains('✘'), "{done}");
    assert!(!done.stdout.contains("mcp-doctor-token"), "{done}");
    for line in [
        "✔ web console on http://127.0.0.1:9480/ (loopback only, no token)",
        "✔ `switchboard mcp` serves Streamable HTTP on http://127.0.0.1:9481/mcp (bearer MCP_TOKEN)",
        "tools added from the chat: every user (TOOL_BUILDERS=all)",
        "✔ `switchboard mcp` offers the agent's own tools of tier `data` (MCP_SERVER_TOOLS), acting as telegram:900 (MCP_SERVER_USER)",
        "✔ Telegram accepts TELEGRAM_BOT_TOKEN (bot @",
        "✔ Discord accepts DISCORD_BOT_TOKEN",
        "✔ DATA_DIR",
        "✔ WORKSPACE_DIR",
        "✔ SCRIPT_TOOLS_DIR",
        "✔ HTTP_TOOLS_FILE",
    ] {
        assert!(done.stdout.contains(line), "{line}\n{done}");
    }
    // Checking creates nothing: the directories appear when the gateway runs.
    assert!(!Path::new(&env.path("ws")).exists());
}

#[tokio::test]
async fn a_malformed_mcp_server_user_stops_doctor_and_the_mcp_server_with_its_name() {
    let env = Env::new("http://127.0.0.1:9/v1").set("MCP_SERVER_USER", "telegram:ann");
    for args in [&["doctor"][..], &["mcp"][..]] {
        let done = env.run(args).await;
        assert_ne!(done.code, Some(0), "{done}");
        let said = format!("{}{}", done.stdout, done.stderr);
        assert!(
            said.contains("MCP_SERVER_USER is invalid"),
            "{args:?}: {done}"
        );
        assert!(said.contains("telegram:<user_id>"), "{args:?}: {done}");
    }
    let env = Env::new("http://127.0.0.1:9/v1").set("MCP_SERVER_TOOLS", "act");
    let done = env.run(&["mcp"]).await;
    assert_ne!(done.code, Some(0), "{done}");
    assert!(done.stderr.contains("MCP_SERVER_USER is not set"), "{done}");
}

#[tokio::test]
async fn doctor_piped_into_a_closed_pipe_does_not_panic() {
    // The model endpoint holds the connection until the reader has gone, so
    // the lines after the first are written into a closed pipe.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let env = Env::new(&format!("http://{addr}/v1"));
    let mut child = env.command(&["doctor"]).spawn().unwrap();
    drop(child.stdin.take());
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    tokio::time::timeout(HANG, stdout.read_line(&mut first))
        .await
        .expect("a first line")
        .unwrap();
    assert!(first.starts_with("✔ configuration loaded"), "{first}");
    drop(stdout); // `| head -1`
    let (held, _) = tokio::time::timeout(HANG, listener.accept())
        .await
        .expect("the model probe connects")
        .unwrap();
    drop(held);
    let mut stderr = String::new();
    let mut err = child.stderr.take().unwrap();
    let status = tokio::time::timeout(HANG, async {
        err.read_to_string(&mut stderr).await.unwrap();
        child.wait().await.unwrap()
    })
    .await
    .expect("doctor ends");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_ne!(status.code(), Some(101), "{stderr}");
}

// ---------------------------------------------------------------- model URL

#[tokio::test]
async fn a_404_without_v1_names_the_url_requested_and_suggests_the_suffix() {
    let (base, _server) = plain_404_server().await;
    let env = Env::new(&base);
    let done = env.run(&["doctor"]).await;
    assert_eq!(done.code, Some(1), "{done}");
    let line = done.failure("model endpoint");
    assert!(
        line.contains(&format!("{base}/chat/completions")),
        "the URL requested: {line}"
    );
    assert!(line.contains("404 page not found"), "{line}");
    assert!(line.contains(&format!("{base}/v1")), "the fix: {line}");
}

#[tokio::test]
async fn a_key_in_the_base_url_query_is_never_shown() {
    let port = dead_port();
    let env = Env::new(&format!(
        "http://127.0.0.1:{port}/v1?key=sk-query-secret-123"
    ));
    for args in [&["doctor"][..], &["model"][..]] {
        let done = env.run(args).await;
        assert!(
            !done.stdout.contains("sk-query-secret-123")
                && !done.stderr.contains("sk-query-secret-123"),
            "{done}"
        );
        assert!(done.stdout.contains("key=redacted"), "{done}");
    }
}

#[tokio::test]
async fn the_console_names_an_unreachable_endpoint_and_the_audit_log_keeps_the_cause() {
    let port = dead_port();
    let env = Env::new(&format!("http://127.0.0.1:{port}/v1"));
    let done = env.run_with(&["chat"], "hello\n").await;
    assert_eq!(done.code, Some(0), "{done}");
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    assert!(done.stdout.contains("can't be reached"), "{done}");
    assert!(
        done.stdout.contains(&url),
        "the console names the URL\n{done}"
    );
    assert!(done.stdout.contains("switchboard doctor"), "{done}");
    let events = env.run(&["events"]).await;
    let line = events
        .stdout
        .lines()
        .find(|l| l.contains("error.model"))
        .unwrap_or_else(|| panic!("no error.model event\n{events}"));
    assert!(line.contains("\"cause\""), "{line}");
    assert!(line.contains(&url), "the cause names the URL: {line}");
}

// ---------------------------------------------------------------- DATA_DIR

#[tokio::test]
async fn an_unusable_data_dir_is_named_by_chat_and_the_admin_commands() {
    let llm = FakeLlm::start().await;
    let env = Env::new(&llm.base_url());
    std::fs::write(env.path("data-file"), "x").unwrap();
    let env = env.set_path("DATA_DIR", "data-file");
    let chat = env.run_with(&["chat"], "hello\n").await;
    assert_ne!(chat.code, Some(0), "{chat}");
    assert!(chat.stderr.contains("DATA_DIR"), "{chat}");
    let pair = env.run(&["pair", "list"]).await;
    assert_ne!(pair.code, Some(0), "{pair}");
    assert!(pair.stderr.contains("DATA_DIR"), "{pair}");
    assert!(llm.requests().await.is_empty());
}

// ---------------------------------------------------------------- exec sandbox

#[tokio::test]
async fn doctor_states_the_exec_sandbox_and_warns_when_commands_run_unconfined() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("OK"));
    let env = Env::new(&llm.base_url()).set("EXEC_NETWORK", "none");
    let done = env.run(&["doctor"]).await;
    let line = done
        .stdout
        .lines()
        .find(|l| l.contains("exec sandbox: "))
        .unwrap_or_else(|| panic!("no sandbox line\n{done}"));
    // This machine (and CI's) has Landlock or bwrap: auto confines.
    assert!(
        line.starts_with("✔ exec sandbox: landlock ABI ")
            || line.starts_with("✔ exec sandbox: bwrap"),
        "{done}"
    );
    assert!(line.ends_with(", network off"), "{line}");

    let env = env.set("EXEC_SANDBOX", "none");
    let done = env.run(&["doctor"]).await;
    assert!(
        done.stdout.contains("• exec sandbox: none, network off"),
        "{done}"
    );
    assert!(
        done.stdout.lines().any(|l| l.starts_with('•')
            && l.contains("EXEC_SANDBOX=none")
            && l.contains("unconfined")),
        "{done}"
    );

    // Every start says it too (chat logs to DATA_DIR/chat.log).
    let done = env.run(&["chat"]).await;
    assert_eq!(done.code, Some(0), "{done}");
    let log = std::fs::read_to_string(Path::new(&env.path("data")).join("chat.log")).unwrap();
    assert!(
        log.contains("WARN") && log.contains("EXEC_SANDBOX=none"),
        "{log}"
    );

    // A level the machine lacks is a failure naming the fix.
    let env = env.set("EXEC_SANDBOX", "bwrap").set("PATH", "/nonexistent");
    let done = env.run(&["doctor"]).await;
    assert!(
        done.failure("exec sandbox").contains("install bubblewrap"),
        "{done}"
    );

    let done = env.set("EXEC_SANDBOX", "docker").run(&["doctor"]).await;
    assert_ne!(done.code, Some(0), "{done}");
    assert!(
        done.stderr.contains("EXEC_SANDBOX") && done.stderr.contains("landlock"),
        "{done}"
    );
}

#[tokio::test]
async fn doctor_lists_each_mcp_server_up_or_down_and_the_entries_it_skipped() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("OK"));
    let env = Env::new(&llm.base_url());
    let script = support::deps::mcp().node_script("misbehaving.mjs");
    let servers = serde_json::json!({"mcpServers": {
        "notes": {"command": "node", "args": [script], "deny": ["crash"], "autoApprove": true},
        "gone": {"command": "/nonexistent/server"},
        "half": {"url": "ftp://example.com"}
    }});
    std::fs::write(env.path("mcp.json"), servers.to_string()).unwrap();
    let env = env.set_path("MCP_SERVERS_FILE", "mcp.json");
    let done = env.run(&["doctor"]).await;
    assert_eq!(done.code, Some(1), "{done}");
    assert!(done.stdout.contains("✔ MCP_SERVERS_FILE"), "{done}");
    assert!(
        done.stdout.contains("✔ MCP server notes up (protocol ")
            && done.stdout.contains("7 tools offered of 8 listed"),
        "{done}"
    );
    assert!(
        done.failure("MCP server gone down")
            .contains("cannot start"),
        "{done}"
    );
    assert!(
        done.stdout
            .contains("• MCP server notes: unknown field `autoApprove`"),
        "{done}"
    );
    assert!(
        done.stdout
            .contains("• MCP server half: `url` must be http or https"),
        "{done}"
    );
}
