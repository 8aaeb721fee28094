//! The real `switchboard` binary: `chat` as a console channel on piped stdin
//! (no TTY) against the fake LLM, and the operator commands `run`, `migrate`,
//! `doctor`, `pair`, `tasks`, `memory`, `model` and configuration errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{Duration as Span, Utc};
use serde_json::{json, Value};
use support::e2e::messages;
use support::fake_anthropic::{FakeAnthropic, Reply as AnthropicReply};
use support::fake_gemini::{FakeGemini, Reply as GeminiReply};
use support::fake_llm::{last_user_text, FakeLlm, Reply};
use switchboard::store::{
    MemoryKind, MemoryOwner, NewMemory, Store, TaskNotify, TaskRecord, TaskStatus,
};
use switchboard_platform::{ChatAddress, ChatId, Platform, ThreadId, UserId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::watch;

/// How long a command may run before the test calls it hung. Generous: the
/// binary is a debug build and other builds may share the machine.
const HANG: Duration = Duration::from_secs(90);

/// A temp home for one binary run: data dir, database and workspace inside it.
struct Env {
    dir: tempfile::TempDir,
    vars: Vec<(String, String)>,
}

impl Env {
    /// Every variable the binary needs, pointing at `llm_base_url`; nothing
    /// inherited from the test's environment except `PATH`.
    fn new(llm_base_url: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let vars = vec![
            ("LLM_BASE_URL".into(), llm_base_url.to_owned()),
            ("LLM_MODEL".into(), "fake-model".into()),
            ("DATA_DIR".into(), data.display().to_string()),
            (
                "DATABASE_URL".into(),
                format!("sqlite://{}", data.join("switchboard.db").display()),
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

    fn unset(mut self, var: &str) -> Env {
        self.vars.retain(|(k, _)| k != var);
        self
    }

    /// The store the binary uses (`DATABASE_URL`), for seeding and checking.
    async fn store(&self) -> Store {
        let url = self
            .vars
            .iter()
            .find(|(k, _)| k == "DATABASE_URL")
            .map(|(_, v)| v.clone())
            .unwrap();
        Store::open(&url).await.unwrap()
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .envs(self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            // No `.env` of the repository is picked up.
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    fn spawn(&self, args: &[&str]) -> Running {
        Running::spawn(self.command(args))
    }

    /// Runs a command with empty stdin to completion.
    async fn run(&self, args: &[&str]) -> Finished {
        let mut running = self.spawn(args);
        running.close_stdin();
        running.finish().await
    }
}

/// Everything a stream printed so far, updated as it arrives.
#[derive(Clone)]
struct Captured {
    text: Arc<Mutex<String>>,
    changed: watch::Sender<u64>,
}

impl Captured {
    /// Reads `stream` to its end in a task; the handle ends with the stream.
    fn collect(
        mut stream: impl AsyncRead + Unpin + Send + 'static,
    ) -> (Captured, tokio::task::JoinHandle<()>) {
        let captured = Captured {
            text: Arc::default(),
            changed: watch::Sender::new(0),
        };
        let c = captured.clone();
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        c.text
                            .lock()
                            .unwrap()
                            .push_str(&String::from_utf8_lossy(&buf[..n]));
                        c.changed.send_modify(|v| *v += 1);
                    }
                }
            }
        });
        (captured, reader)
    }

    fn get(&self) -> String {
        self.text.lock().unwrap().clone()
    }
}

/// A running binary with piped stdin and captured output.
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Captured,
    stderr: Captured,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

impl std::fmt::Display for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

impl Running {
    fn spawn(mut cmd: Command) -> Running {
        let mut child = cmd.spawn().expect("the switchboard binary starts");
        let stdin = child.stdin.take();
        let (stdout, out_reader) = Captured::collect(child.stdout.take().unwrap());
        let (stderr, err_reader) = Captured::collect(child.stderr.take().unwrap());
        Running {
            child,
            stdin,
            stdout,
            stderr,
            readers: vec![out_reader, err_reader],
        }
    }

    async fn write(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// End of input.
    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn report(&self, what: &str) -> String {
        format!(
            "{what}\n--- stdout so far ---\n{}\n--- stderr so far ---\n{}",
            self.stdout.get(),
            self.stderr.get()
        )
    }

    /// Waits until stdout contains `needle`.
    async fn wait_for_output(&self, needle: &str) {
        let mut rx = self.stdout.changed.subscribe();
        let found = tokio::time::timeout(HANG, async {
            loop {
                rx.borrow_and_update();
                if self.stdout.get().contains(needle) {
                    return;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
        .await;
        if found.is_err() {
            panic!(
                "{}",
                self.report(&format!("stdout never showed {needle:?}"))
            );
        }
    }

    /// Waits for the process to exit (killing it if it hangs) and returns its output.
    async fn finish(mut self) -> Finished {
        match tokio::time::timeout(HANG, self.child.wait()).await {
            Ok(status) => {
                let status = status.unwrap();
                // The pipes close with the process: read them to the end.
                for reader in self.readers.drain(..) {
                    let _ = tokio::time::timeout(HANG, reader).await;
                }
                Finished {
                    status,
                    stdout: self.stdout.get(),
                    stderr: self.stderr.get(),
                }
            }
            Err(_) => {
                let report = self.report("the process hung (killed)");
                let _ = self.child.kill().await;
                panic!("{report}");
            }
        }
    }
}

/// The last message of a request (user, assistant or tool).
fn last_message(request: &Value) -> Value {
    messages(request).last().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------- chat

#[tokio::test]
async fn chat_answers_piped_lines_and_exits_at_end_of_input() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let asked = last_user_text(request).unwrap_or_default();
        Reply::text(&format!("Hi! You said: {asked}"))
    });
    let env = Env::new(&llm.base_url());
    let mut chat = env.spawn(&["chat"]);
    chat.write("hello there\n").await;
    chat.close_stdin();
    let done = chat.finish().await;

    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Hi! You said: hello there"), "{done}");
    let requests = llm.requests().await;
    assert!(
        requests
            .iter()
            .any(|r| last_user_text(r).as_deref() == Some("hello there")),
        "{requests:#?}"
    );
    assert!(
        Path::new(&env.dir.path().join("data/switchboard.db")).exists(),
        "the conversation was stored in DATABASE_URL"
    );
}

#[tokio::test]
async fn chat_attaches_a_local_file_with_attach_and_by_dropping_its_path() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let asked = last_user_text(request).unwrap_or_default();
        let csv = if asked.contains("north,120") {
            "with the CSV"
        } else {
            "without it"
        };
        Reply::text(&format!("Answered {csv}."))
    });
    let env = Env::new(&llm.base_url());
    let csv = env.dir.path().join("sales data.csv");
    std::fs::write(&csv, "region,sales\nnorth,120\n").unwrap();
    let mut chat = env.spawn(&["chat"]);
    chat.write(&format!("/attach '{}' total?\n", csv.display()))
        .await;
    chat.write(&format!(
        "{}\n",
        csv.display().to_string().replace(' ', "\\ ")
    ))
    .await;
    chat.write("/attach /no/such/file.csv\n").await;
    chat.close_stdin();
    let done = chat.finish().await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert_eq!(
        done.stdout.matches("Answered with the CSV.").count(),
        2,
        "{done}"
    );
    assert!(
        done.stdout.contains("cannot attach /no/such/file.csv"),
        "{done}"
    );
    let workspace = env.dir.path().join("ws/inbox/console-0");
    assert!(
        workspace.join("sales data.csv").exists() && workspace.join("sales data-2.csv").exists()
    );
}

#[tokio::test]
async fn chat_runs_a_command_after_y_on_stdin_approves_it() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let last = last_message(request);
        if last["role"] == "tool" {
            let result = last["content"].as_str().unwrap_or_default();
            Reply::text(&format!("Done. Tool said: {result}"))
        } else {
            Reply::tool_calls([(
                "call_1",
                "exec_command",
                json!({"command": "echo approved > proof.txt; echo ran-it"}),
            )])
        }
    });
    let env = Env::new(&llm.base_url()).set("APPROVAL_TIMEOUT", "60");
    let mut chat = env.spawn(&["chat"]);
    chat.write("please run it\ny\n").await;
    chat.close_stdin();
    let done = chat.finish().await;

    assert_eq!(done.code(), Some(0), "{done}");
    assert!(
        done.stdout.contains("[y]") && done.stdout.contains("[n]"),
        "the card lists its keys\n{done}"
    );
    assert!(done.stdout.contains("Allowed once"), "{done}");
    assert!(done.stdout.contains("Done. Tool said:"), "{done}");
    assert!(done.stdout.contains("ran-it"), "{done}");
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("proof.txt")).unwrap_or_default(),
        "approved\n",
        "the command ran in WORKSPACE_DIR\n{done}"
    );
    let requests = llm.requests().await;
    assert!(
        !requests
            .iter()
            .any(|r| last_user_text(r).as_deref() == Some("y")),
        "`y` answered the card; it was not sent to the model"
    );
}

#[tokio::test]
async fn chat_with_more_piped_lines_than_the_rate_limit_answers_all_and_exits() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let asked = last_user_text(request).unwrap_or_default();
        Reply::text(&format!("echo: {asked}."))
    });
    let env = Env::new(&llm.base_url());
    let mut chat = env.spawn(&["chat"]);
    let lines: String = (1..=25).map(|i| format!("line {i}\n")).collect();
    chat.write(&lines).await;
    chat.close_stdin();
    let done = chat.finish().await;

    assert_eq!(done.code(), Some(0), "{done}");
    let mut at = 0;
    for i in 1..=25 {
        let answer = format!("echo: line {i}.");
        match done.stdout[at..].find(&answer) {
            Some(pos) => at += pos + answer.len(),
            None => panic!("no answer {answer:?} (in order)\n{done}"),
        }
    }
}

#[tokio::test]
async fn chat_takes_a_key_after_an_expired_card_as_a_message() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let last = last_message(request);
        if last["role"] == "tool" {
            Reply::text("The command was not run.")
        } else if last_user_text(request).as_deref() == Some("y") {
            Reply::text("You said y to me.")
        } else {
            Reply::tool_calls([(
                "call_1",
                "exec_command",
                json!({"command": "echo never > never.txt"}),
            )])
        }
    });
    let env = Env::new(&llm.base_url()).set("APPROVAL_TIMEOUT", "1");
    let mut chat = env.spawn(&["chat"]);
    chat.write("please run it\n").await;
    chat.wait_for_output("Expired").await;
    chat.wait_for_output("The command was not run.").await;
    // The card is dead: `y` is now an ordinary message to the agent.
    chat.write("y\n").await;
    chat.close_stdin();
    let done = chat.finish().await;

    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.contains("You said y to me."), "{done}");
    assert!(!env.workspace().join("never.txt").exists());
}

#[tokio::test]
async fn chat_denies_a_pending_card_at_end_of_input_and_exits() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let last = last_message(request);
        if last["role"] == "tool" {
            let result = last["content"].as_str().unwrap_or_default();
            Reply::text(&format!("Not run: {result}"))
        } else {
            Reply::tool_calls([(
                "call_1",
                "exec_command",
                json!({"command": "echo never > never.txt"}),
            )])
        }
    });
    // The default 10-minute expiry: waiting for it would trip the hang guard.
    let env = Env::new(&llm.base_url());
    let mut chat = env.spawn(&["chat"]);
    chat.write("please run it\n").await;
    chat.close_stdin();
    let done = chat.finish().await;

    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.contains("end of input"), "{done}");
    assert!(done.stdout.contains("Denied"), "{done}");
    assert!(
        done.stdout.contains("Not run:"),
        "the turn finished\n{done}"
    );
    assert!(!env.workspace().join("never.txt").exists());
}

#[tokio::test]
async fn chat_prints_carriage_returns_and_escape_sequences_inert() {
    // Raw on a terminal, `\r` and the erase sequence leave only `$ echo SAFE`
    // on the card's line, and OSC 52 writes the operator's clipboard.
    const COMMAND: &str = "touch X #\r\x1b[2K$ echo SAFE\x1b]52;c;cm0gLXJmIH4=\x07";
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        if last_message(request)["role"] == "tool" {
            // The model's answer repeats the command as it was.
            Reply::text(&format!("Not run: {COMMAND}"))
        } else {
            Reply::tool_calls([("call_1", "exec_command", json!({ "command": COMMAND }))])
        }
    });
    let env = Env::new(&llm.base_url()).set("APPROVAL_TIMEOUT", "60");
    let mut chat = env.spawn(&["chat"]);
    chat.write("please run it\nn\n").await;
    chat.close_stdin();
    let done = chat.finish().await;

    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Denied"), "{done}");
    assert!(!env.workspace().join("X").exists(), "{done}");
    let out = &done.stdout;
    assert!(
        out.contains("$ touch X #⟨U+000D⟩⟨U+001B⟩[2K$ echo SAFE⟨U+001B⟩]52;c;"),
        "{done}"
    );
    assert!(
        out.contains("⚠ hidden, control or look-alike characters shown as ⟨U+…⟩: 4"),
        "{done}"
    );
    assert!(
        out.contains("Not run: touch X #␍␛[2K$ echo SAFE␛]52;c;cm0gLXJmIH4=␇"),
        "{done}"
    );
    assert!(
        !out.contains('\r') && !out.contains('\x1b') && !out.contains('\x07'),
        "{out:?}"
    );
}

// ---------------------------------------------------------------- operator commands

#[tokio::test]
async fn run_without_a_platform_exits_2_and_names_the_variables() {
    let env = Env::new("http://127.0.0.1:9/v1");
    let done = env.run(&["run"]).await;
    assert_eq!(done.code(), Some(2), "{done}");
    assert!(done.stderr.contains("TELEGRAM_BOT_TOKEN"), "{done}");
    assert!(done.stderr.contains("DISCORD_BOT_TOKEN"), "{done}");
    assert!(done.stderr.contains("switchboard chat"), "{done}");
}

#[tokio::test]
async fn migrate_creates_a_fresh_sqlite_database() {
    let env = Env::new("http://127.0.0.1:9/v1");
    let path = env.dir.path().join("nested/deeper/fresh.db");
    let url = format!("sqlite://{}", path.display());
    let env = env.set("DATABASE_URL", &url);
    assert!(!path.exists());

    let done = env.run(&["migrate"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.contains("up to date"), "{done}");
    assert!(path.exists(), "the database file was created\n{done}");

    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let (applied,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    let expected = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"))
        .unwrap()
        .count();
    assert_eq!(applied as usize, expected, "every migration applied");

    let again = env.run(&["migrate"]).await;
    assert_eq!(
        again.code(),
        Some(0),
        "migrating twice is harmless\n{again}"
    );
}

#[tokio::test]
async fn doctor_passes_against_a_model_that_answers() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("OK"));
    let env = Env::new(&llm.base_url());
    let done = env.run(&["doctor"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.contains("✔ configuration loaded"), "{done}");
    assert!(done.stdout.contains("✔ database"), "{done}");
    assert!(done.stdout.contains("✔ model endpoint answers"), "{done}");
    assert!(!done.stdout.contains('✘'), "{done}");
    assert_eq!(llm.requests().await.len(), 1, "one probe request");
}

#[tokio::test]
async fn doctor_fails_with_a_clear_message_when_the_model_endpoint_is_down() {
    // A port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let env = Env::new(&format!("http://127.0.0.1:{port}/v1"));
    let done = env.run(&["doctor"]).await;
    assert_eq!(done.code(), Some(1), "{done}");
    assert!(done.stdout.contains("✔ database"), "{done}");
    let line = done
        .stdout
        .lines()
        .find(|l| l.starts_with("✘ model endpoint"))
        .unwrap_or_else(|| panic!("no model endpoint failure line\n{done}"));
    assert!(
        line.contains(&format!("127.0.0.1:{port}")) || line.contains("connect"),
        "the failure says what could not be reached: {line}"
    );
}

#[tokio::test]
async fn the_operator_admits_lists_and_revokes_a_user() {
    let env = Env::new("http://127.0.0.1:9/v1");
    let done = env
        .run(&["pair", "admit", "--platform", "telegram", "--user", "4242"])
        .await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert_eq!(done.stdout.trim(), "Admitted telegram user 4242.", "{done}");

    let done = env.run(&["pair", "list"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(
        done.stdout
            .contains("Admitted users:\n  telegram user 4242  by operator on "),
        "{done}"
    );

    let done = env
        .run(&["pair", "revoke", "--platform", "telegram", "--user", "4242"])
        .await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Revoked telegram user 4242"), "{done}");
    let done = env.run(&["pair", "list"]).await;
    assert!(done.stdout.contains("No admitted users."), "{done}");

    let done = env
        .run(&["pair", "revoke", "--platform", "telegram", "--user", "4242"])
        .await;
    assert_ne!(done.code(), Some(0), "{done}");
    assert!(
        done.stderr.contains("telegram user 4242 is not admitted"),
        "{done}"
    );

    let done = env.run(&["events"]).await;
    assert!(done.stdout.contains("pairing.revoked"), "{done}");
    assert!(done.stdout.contains("pairing.admitted"), "{done}");
}

#[tokio::test]
async fn pair_list_on_an_empty_database_says_there_is_nothing_pending() {
    let env = Env::new("http://127.0.0.1:9/v1");
    let done = env.run(&["pair", "list"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert_eq!(
        done.stdout.trim(),
        "No pending pairing requests.\nNo admitted users.",
        "{done}"
    );

    let done = env.run(&["pair", "approve", "ZZZZ99"]).await;
    assert_ne!(done.code(), Some(0), "{done}");
    assert!(
        done.stderr
            .contains("no pending, unexpired pairing code ZZZZ99"),
        "{done}"
    );
}

#[tokio::test]
async fn configuration_errors_name_the_variable_and_the_fix() {
    let base = "http://127.0.0.1:9/v1";
    let cases: [(Env, &str, &[&str]); 4] = [
        (
            Env::new(base).set("ACCESS_POLICY", "bogus"),
            "ACCESS_POLICY",
            &["bogus", "pairing", "allowlist", "open"],
        ),
        (
            Env::new(base).unset("LLM_BASE_URL"),
            "LLM_BASE_URL",
            &["not set", "http://localhost:11434/v1"],
        ),
        (Env::new(base).unset("LLM_MODEL"), "LLM_MODEL", &["not set"]),
        (
            Env::new(base).set("MAX_TOOL_ROUNDS", "many"),
            "MAX_TOOL_ROUNDS",
            &["many", "positive whole number"],
        ),
    ];
    for (env, var, hints) in cases {
        for args in [&["chat"][..], &["doctor"][..]] {
            let done = env.run(args).await;
            assert_eq!(done.code(), Some(1), "{args:?} with bad {var}\n{done}");
            assert!(done.stdout.is_empty(), "{done}");
            let first = done.stderr.lines().next().unwrap_or_default();
            assert!(first.starts_with("error: "), "{done}");
            assert!(first.contains(var), "names {var}\n{done}");
            for hint in hints {
                assert!(first.contains(hint), "mentions {hint:?}\n{done}");
            }
        }
    }
}

// ---------------------------------------------------------------- tasks, memory, model

/// `memory forget ID` for Telegram user 42.
fn forget_of_user_42(id: &str) -> [&str; 7] {
    [
        "memory",
        "forget",
        "--platform",
        "telegram",
        "--user",
        "42",
        id,
    ]
}

/// A task row as the task manager inserts it.
async fn seed_task(
    store: &Store,
    id: &str,
    tool: &str,
    chat: ChatAddress,
    minutes_ago: i64,
) -> TaskRecord {
    let task = TaskRecord {
        id: id.parse().unwrap(),
        session_id: format!("session-{id}").parse().unwrap(),
        tool_name: tool.into(),
        arguments: "{}".into(),
        status: TaskStatus::Running,
        stage: String::new(),
        detail: String::new(),
        percent: None,
        result: None,
        chat,
        status_message: None,
        notify: TaskNotify::Done,
        created_at: Utc::now() - Span::minutes(minutes_ago),
        finished_at: None,
    };
    store.tasks().insert(&task).await.unwrap();
    task
}

#[tokio::test]
async fn tasks_lists_every_chats_tasks_newest_first_and_filters_by_status() {
    let env = Env::new("http://127.0.0.1:9/v1");
    let done = env.run(&["tasks"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert_eq!(done.stdout.trim(), "No background tasks.", "{done}");

    let store = env.store().await;
    let tg = ChatAddress::new(Platform::Telegram, ChatId(111), None);
    let dc = ChatAddress::new(Platform::Discord, ChatId(222), Some(ThreadId(333)));
    // Started in this order, but created at different times: newest is "bbbb…".
    seed_task(&store, "aaaaaaaa0001", "exec_command", tg, 30).await;
    seed_task(&store, "cccccccc0003", "web_fetch", dc, 20).await;
    seed_task(&store, "bbbbbbbb0002", "exec_command", tg, 10).await;
    store
        .tasks()
        .finish(
            &"aaaaaaaa0001".parse().unwrap(),
            TaskStatus::Failed,
            "exit status 2:\ncargo: not found",
        )
        .await
        .unwrap();
    store
        .tasks()
        .update_progress(
            &"bbbbbbbb0002".parse().unwrap(),
            TaskStatus::Running,
            "building",
            "crate 3 of 7",
            Some(40),
        )
        .await
        .unwrap();
    store
        .tasks()
        .finish(
            &"cccccccc0003".parse().unwrap(),
            TaskStatus::Succeeded,
            &"x".repeat(500),
        )
        .await
        .unwrap();
    store.close().await;

    let done = env.run(&["tasks"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    let out = &done.stdout;
    let pos = |needle: &str| {
        out.find(needle)
            .unwrap_or_else(|| panic!("no {needle:?}\n{done}"))
    };
    assert!(
        pos("bbbbbbbb ") < pos("cccccccc ") && pos("cccccccc ") < pos("aaaaaaaa "),
        "newest first\n{done}"
    );
    let line = |id: &str| out.lines().find(|l| l.starts_with(id)).unwrap().to_owned();
    let running = line("bbbbbbbb");
    assert!(
        running.contains("running") && running.contains("exec_command"),
        "{running}"
    );
    assert!(running.contains("telegram chat 111"), "{running}");
    assert!(running.contains("finished —"), "{running}");
    assert!(
        out.contains("progress 40% building: crate 3 of 7"),
        "{done}"
    );
    let failed = line("aaaaaaaa");
    assert!(
        failed.contains("failed") && !failed.contains("finished —"),
        "{failed}"
    );
    assert!(
        out.contains("result: exit status 2: cargo: not found"),
        "one line\n{done}"
    );
    assert!(
        line("cccccccc").contains("discord chat 222 thread 333"),
        "{done}"
    );
    assert!(
        out.contains(&format!("result: {}…", "x".repeat(100))),
        "clipped\n{done}"
    );
    assert!(!out.contains(&"x".repeat(101)), "{done}");

    let done = env.run(&["tasks", "--status", "failed"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.starts_with("aaaaaaaa"), "{done}");
    assert!(
        !done.stdout.contains("bbbbbbbb") && !done.stdout.contains("cccccccc"),
        "{done}"
    );

    let done = env.run(&["tasks", "--limit", "1"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(done.stdout.starts_with("bbbbbbbb"), "{done}");
    assert!(
        !done.stdout.contains("aaaaaaaa") && !done.stdout.contains("cccccccc"),
        "{done}"
    );

    let done = env.run(&["tasks", "--status", "cancelled"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert_eq!(
        done.stdout.trim(),
        "No background tasks with status cancelled.",
        "{done}"
    );

    let done = env.run(&["tasks", "--status", "exploded"]).await;
    assert_eq!(done.code(), Some(1), "{done}");
    assert!(done.stderr.contains("\"exploded\""), "{done}");
    assert!(
        done.stderr.contains("running") && done.stderr.contains("interrupted"),
        "{done}"
    );
}

fn memory(kind: MemoryKind, content: &str, importance: f64) -> NewMemory {
    NewMemory {
        kind,
        content: content.into(),
        source_ref: "tool:remember".into(),
        importance,
        expires_at: None,
    }
}

#[tokio::test]
async fn memory_lists_and_forgets_one_users_memories_only() {
    let env = Env::new("http://127.0.0.1:9/v1");
    let store = env.store().await;
    let me = MemoryOwner::new(Platform::Telegram, UserId(42));
    let other = MemoryOwner::new(Platform::Telegram, UserId(43));
    let elsewhere = MemoryOwner::new(Platform::Discord, UserId(42));
    let now = Utc::now();
    let short = memory(MemoryKind::Preference, "Prefers short answers.", 0.8);
    let short_id = store.memories().insert(me, &short, &[], now).await.unwrap();
    let cat = memory(MemoryKind::Fact, "Has a cat\ncalled Miso.", 0.55);
    let cat_id = store.memories().insert(me, &cat, &[], now).await.unwrap();
    store.memories().touch(me, &[cat_id], now).await.unwrap();
    let theirs = memory(MemoryKind::Preference, "Likes long essays.", 0.5);
    let theirs_id = store
        .memories()
        .insert(other, &theirs, &[], now)
        .await
        .unwrap();
    let discord = memory(MemoryKind::Fact, "Plays chess on Discord.", 0.5);
    store
        .memories()
        .insert(elsewhere, &discord, &[], now)
        .await
        .unwrap();
    store.close().await;

    let list = ["memory", "list", "--platform", "telegram", "--user", "42"];
    let done = env.run(&list).await;
    assert_eq!(done.code(), Some(0), "{done}");
    let out = &done.stdout;
    assert!(out.starts_with("2 memories of telegram user 42"), "{done}");
    assert!(
        out.contains("preference (1)") && out.contains("fact (1)"),
        "{done}"
    );
    let line = |id: i64| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("#{id} ")))
            .unwrap_or_else(|| panic!("no memory #{id}\n{done}"))
    };
    let pref = line(short_id);
    assert!(
        pref.contains("importance 0.80") && pref.contains("last access never"),
        "{pref}"
    );
    assert!(pref.ends_with("Prefers short answers."), "{pref}");
    let fact = line(cat_id);
    assert!(fact.contains("importance 0.55"), "{fact}");
    assert!(
        fact.contains(&format!("last access {}", now.format("%Y-%m-%d"))),
        "{fact}"
    );
    assert!(fact.ends_with("Has a cat called Miso."), "{fact}");
    assert!(
        !out.contains("long essays") && !out.contains("chess"),
        "only this user\n{done}"
    );

    // Another user's memory id is not this user's to forget.
    let theirs_arg = theirs_id.to_string();
    let done = env.run(&forget_of_user_42(&theirs_arg)).await;
    assert_eq!(done.code(), Some(1), "{done}");
    assert!(
        done.stderr
            .contains(&format!("telegram user 42 has no memory #{theirs_id}")),
        "{done}"
    );

    let arg = format!("#{short_id}");
    let done = env.run(&forget_of_user_42(&arg)).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(
        done.stdout
            .contains(&format!("Forgot preference #{short_id}")),
        "{done}"
    );

    let done = env.run(&list).await;
    assert!(
        done.stdout.starts_with("1 memory of telegram user 42"),
        "{done}"
    );
    assert!(!done.stdout.contains("short answers"), "{done}");

    let store = env.store().await;
    assert!(store.memories().get(me, short_id).await.unwrap().is_none());
    assert!(store
        .memories()
        .get(other, theirs_id)
        .await
        .unwrap()
        .is_some());
    let forgotten = store.audit().recent(20).await.unwrap();
    let event = forgotten
        .iter()
        .find(|e| e.kind == "memory.forgotten")
        .expect("the deletion is audited");
    assert_eq!(event.detail["id"], short_id);
    assert_eq!(event.detail["platform"], "telegram");
    assert_eq!(event.detail["user"], 42);
    store.close().await;

    let done = env
        .run(&["memory", "list", "--platform", "telegram", "--user", "7"])
        .await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert_eq!(
        done.stdout.trim(),
        "No memories of telegram user 7.",
        "{done}"
    );
}

#[tokio::test]
async fn memory_refuses_an_unknown_platform_or_a_bad_id_naming_it() {
    let env = Env::new("http://127.0.0.1:9/v1");
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["memory", "list", "--platform", "slack", "--user", "42"],
            &["\"slack\"", "telegram, discord or console"],
        ),
        (
            &["memory", "list", "--platform", "discord", "--user", "bob"],
            &["\"bob\"", "numeric discord user id"],
        ),
        (
            &[
                "memory",
                "forget",
                "--platform",
                "telegram",
                "--user",
                "42",
                "x7",
            ],
            &["bad memory id \"x7\""],
        ),
        (
            &[
                "memory",
                "forget",
                "--platform",
                "telegram",
                "--user",
                "42",
                "99",
            ],
            &["telegram user 42 has no memory #99"],
        ),
    ];
    for (args, hints) in cases {
        let done = env.run(args).await;
        assert_eq!(done.code(), Some(1), "{args:?}\n{done}");
        assert!(done.stdout.is_empty(), "{done}");
        for hint in hints {
            assert!(
                done.stderr.contains(hint),
                "{args:?} mentions {hint:?}\n{done}"
            );
        }
    }
}

#[tokio::test]
async fn model_shows_the_window_in_use_and_where_it_came_from_without_a_password() {
    // Nothing listens on port 9: the command must not need the endpoint.
    let env =
        Env::new("http://operator:hunter2@127.0.0.1:9/v1").set("LLM_MODEL", "claude-sonnet-4");
    let done = env.run(&["model"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    let out = &done.stdout;
    assert!(out.contains("claude-sonnet-4"), "{done}");
    assert!(
        out.contains("127.0.0.1:9/v1") && !out.contains("hunter2"),
        "{done}"
    );
    assert!(!done.stderr.contains("hunter2"), "{done}");
    assert!(
        out.contains("200000 tokens (inferred from the model name"),
        "{done}"
    );
    assert!(out.contains("above 150000 estimated tokens"), "{done}");

    let env = env.set("LLM_CONTEXT_WINDOW", "8192");
    let done = env.run(&["model"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(
        done.stdout
            .contains("8192 tokens (from LLM_CONTEXT_WINDOW)"),
        "{done}"
    );
    assert!(
        done.stdout.contains("above 4096 estimated tokens"),
        "{done}"
    );
    assert!(
        done.stdout
            .contains("thinking        the endpoint's default"),
        "{done}"
    );

    let done = env.set("LLM_THINKING_BUDGET", "2048").run(&["model"]).await;
    assert!(
        done.stdout
            .contains("thinking        2048 tokens per call (LLM_THINKING_BUDGET)"),
        "{done}"
    );
}

#[tokio::test]
async fn doctor_checks_every_fallback_endpoint_on_its_own() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("OK"));
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let env = Env::new(&llm.base_url())
        .set(
            "LLM_FALLBACK_1_BASE_URL",
            &format!("http://127.0.0.1:{port}/v1"),
        )
        .set("LLM_FALLBACK_1_MODEL", "backup-model")
        .set("LLM_FALLBACK_1_API_KEY", "sk-backup-do-not-print");
    let done = env.run(&["doctor"]).await;
    assert_eq!(
        done.code(),
        Some(1),
        "a dead fallback fails the check\n{done}"
    );
    assert!(done.stdout.contains("✔ model endpoint answers"), "{done}");
    assert!(
        done.stdout.contains("✘ fallback 1 (backup-model)"),
        "{done}"
    );
    assert!(
        !done.stdout.contains("sk-backup-do-not-print")
            && !done.stderr.contains("sk-backup-do-not-print")
    );
}

#[tokio::test]
async fn doctor_and_model_speak_each_protocol() {
    let anthropic = FakeAnthropic::start().await;
    anthropic.require_api_key("sk-ant-doctor-secret");
    anthropic.set_responder(|_| AnthropicReply::text("OK"));
    let gemini = FakeGemini::start().await;
    gemini.require_api_key("gemini-doctor-secret");
    gemini.set_responder(|_| GeminiReply::text("OK"));
    let env = Env::new(&anthropic.base_url())
        .set("LLM_API", "anthropic")
        .set("LLM_MODEL", "claude-sonnet-4")
        .set("LLM_API_KEY", "sk-ant-doctor-secret")
        .set("LLM_FALLBACK_1_API", "gemini")
        .set("LLM_FALLBACK_1_BASE_URL", &gemini.base_url())
        .set("LLM_FALLBACK_1_MODEL", "gemini-2.5-flash")
        .set("LLM_FALLBACK_1_API_KEY", "gemini-doctor-secret");
    let done = env.run(&["doctor"]).await;
    assert_eq!(done.code(), Some(0), "{done}");
    assert!(
        done.stdout
            .contains("✔ model endpoint answers (claude-sonnet-4"),
        "{done}"
    );
    assert!(done.stdout.contains("context window 200000"), "{done}");
    assert!(
        done.stdout
            .contains("✔ fallback 1 answers (gemini-2.5-flash"),
        "{done}"
    );
    assert_eq!(anthropic.requests().len(), 1, "one probe each");
    let model = env.run(&["model"]).await;
    assert_eq!(model.code(), Some(0), "{model}");
    assert!(model.stdout.contains("(anthropic API)"), "{model}");
    assert!(
        model
            .stdout
            .contains("(gemini API, context window 1000000)"),
        "{model}"
    );
    for out in [&done, &model] {
        for secret in ["sk-ant-doctor-secret", "gemini-doctor-secret"] {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "{out}"
            );
        }
    }
}

#[tokio::test]
async fn doctor_lists_skills_and_says_why_a_skill_file_was_skipped() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Reply::text("OK"));
    let skills = tempfile::tempdir().unwrap();
    std::fs::write(
        skills.path().join("standup.md"),
        "---\ndescription: Stand-up from notes\n---\nNotes: {{args}}",
    )
    .unwrap();
    std::fs::write(skills.path().join("broken.md"), "just text").unwrap();
    let env = Env::new(&llm.base_url()).set("SKILLS_DIR", &skills.path().display().to_string());
    let done = env.run(&["doctor"]).await;
    assert_eq!(
        done.code(),
        Some(0),
        "a bad skill file is not fatal\n{done}"
    );
    assert!(
        done.stdout.contains("✔ 3 skills") && done.stdout.contains("standup"),
        "{done}"
    );
    assert!(
        done.stdout.contains("broken.md skipped: no front matter"),
        "{done}"
    );
}
