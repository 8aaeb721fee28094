//! The real `switchboard` binary's admin commands with no model configured
//! (they never call it), and `approvals pending`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use chrono::{Duration as Span, Utc};
use switchboard::store::{ApprovalRecord, ApprovalStatus, Store};
use switchboard_platform::{ChatAddress, ChatId, Platform, ThreadId, UserId};
use tokio::process::Command;

/// How long a command may run before the test calls it hung (a debug build
/// on a shared machine).
const HANG: Duration = Duration::from_secs(90);

/// A temp home with a database and no `LLM_*` variable at all.
pub(crate) struct Env {
    dir: tempfile::TempDir,
}

pub(crate) struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Env {
    pub(crate) fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn database_url(&self) -> String {
        format!(
            "sqlite://{}",
            self.dir.path().join("data/switchboard.db").display()
        )
    }

    pub(crate) async fn store(&self) -> Store {
        Store::open(&self.database_url()).await.unwrap()
    }

    /// Runs the binary with only `DATA_DIR`, `DATABASE_URL`, `PATH` and `HOME`
    /// set, in the temp dir (so no `.env` of the repository is read).
    pub(crate) async fn run(&self, args: &[&str]) -> Output {
        let child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("DATA_DIR", self.dir.path().join("data"))
            .env("DATABASE_URL", self.database_url())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let out = tokio::time::timeout(HANG, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("switchboard {args:?} hung"))
            .unwrap();
        Output {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs a command that must succeed; its stdout.
    pub(crate) async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert_eq!(out.code, Some(0), "switchboard {args:?}\n{out}");
        out.stdout
    }
}

#[tokio::test]
async fn admin_commands_run_without_a_model_configured() {
    let env = Env::new();
    let commands: [&[&str]; 8] = [
        &["migrate"],
        &["pair", "list"],
        &["events"],
        &["tasks"],
        &["approvals", "list"],
        &["approvals", "pending"],
        &["memory", "list", "--platform", "telegram", "--user", "42"],
        &["model"],
    ];
    for args in commands {
        let out = env.run(args).await;
        assert_eq!(out.code, Some(0), "switchboard {args:?}\n{out}");
        assert!(
            !out.stderr.contains("is not set"),
            "switchboard {args:?} asked for a model\n{out}"
        );
    }
    let model = env.run(&["model"]).await;
    assert!(
        model.stdout.contains("No model is configured")
            && model.stdout.contains("LLM_BASE_URL and LLM_MODEL not set"),
        "{model}"
    );
    assert!(
        !model.stdout.contains("invalid"),
        "no placeholder shown\n{model}"
    );
    // The commands that do call the model still say what is missing.
    let chat = env.run(&["chat"]).await;
    assert_eq!(chat.code, Some(1), "{chat}");
    assert!(chat.stderr.contains("LLM_BASE_URL is not set"), "{chat}");
}

fn approval(id: &str, chat: ChatAddress, summary: &str, expires_in: Span) -> ApprovalRecord {
    let now = Utc::now();
    ApprovalRecord {
        id: id.parse().unwrap(),
        session_id: format!("session-{id}").parse().unwrap(),
        tool_name: "exec_command".into(),
        tool_display: "Run command".into(),
        arguments: "{}".into(),
        summary: summary.into(),
        requester: UserId(42),
        requester_name: "Ann".into(),
        chat,
        card_message: None,
        status: ApprovalStatus::Pending,
        decided_by: None,
        decided_by_name: None,
        decided_at: None,
        reason: None,
        created_at: now - Span::seconds(5),
        expires_at: now + expires_in,
    }
}

#[tokio::test]
async fn approvals_pending_lists_the_open_cards_of_every_chat_only() {
    let env = Env::new();
    let out = env.run(&["approvals", "pending"]).await;
    assert_eq!(out.code, Some(0), "{out}");
    assert_eq!(
        out.stdout.trim(),
        "No approvals are waiting for a decision.",
        "{out}"
    );

    let store = env.store().await;
    let tg = ChatAddress::new(Platform::Telegram, ChatId(111), None);
    let dc = ChatAddress::new(Platform::Discord, ChatId(222), Some(ThreadId(333)));
    let open = [
        approval("aaaaaaaa01", tg, "rm -rf build", Span::minutes(9)),
        approval("bbbbbbbb02", dc, "echo \u{1b}[2Jhi", Span::minutes(5)),
    ];
    let decided = approval("cccccccc03", tg, "ls decided", Span::minutes(9));
    let expired = approval("dddddddd04", tg, "ls expired", Span::seconds(-1));
    for a in open.iter().chain([&decided, &expired]) {
        store.approvals().insert(a).await.unwrap();
    }
    store
        .approvals()
        .decide(
            &decided.id,
            ApprovalStatus::Denied,
            None,
            Some("no"),
            Utc::now(),
        )
        .await
        .unwrap();
    store.close().await;

    let out = env.run(&["approvals", "pending"]).await;
    assert_eq!(out.code, Some(0), "{out}");
    let line = |id: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no {id}\n{out}"))
            .to_owned()
    };
    let first = line("aaaaaaaa");
    assert!(
        first.contains("telegram chat 111")
            && first.contains("exec_command")
            && first.contains("requested by Ann (user 42)"),
        "{first}"
    );
    assert!(out.stdout.contains("rm -rf build"), "{out}");
    assert!(
        line("bbbbbbbb").contains("discord chat 222 thread 333"),
        "{out}"
    );
    assert!(
        !out.stdout.contains('\u{1b}') && out.stdout.contains("\u{fffd}[2Jhi"),
        "a summary's escape sequence is printed inert\n{out}"
    );
    assert!(
        !out.stdout.contains("cccccccc") && !out.stdout.contains("dddddddd"),
        "decided and expired cards are not pending\n{out}"
    );
    assert!(
        out.stdout.find("aaaaaaaa") < out.stdout.find("bbbbbbbb"),
        "oldest first\n{out}"
    );
}

#[tokio::test]
async fn the_model_catalogue_and_usage_are_managed_from_the_command_line() {
    let env = Env::new();
    env.run(&["migrate"]).await;
    let add = env
        .run(&[
            "model",
            "add",
            "gpt-4o",
            "--base-url",
            "https://api.openai.com/v1",
            "--key-env",
            "OPENAI_API_KEY",
            "--price-in",
            "2.5",
            "--price-out",
            "10",
            "--vision",
        ])
        .await;
    assert_eq!(add.code, Some(0), "{add}");
    let add = env
        .run(&[
            "model",
            "add",
            "mini",
            "--api",
            "anthropic",
            "--base-url",
            "https://api.anthropic.com/v1",
        ])
        .await;
    assert_eq!(add.code, Some(0), "{add}");
    // A key is named by its variable, never given.
    let bad = env
        .run(&[
            "model",
            "add",
            "x",
            "--base-url",
            "https://h/v1",
            "--key-env",
            "sk-live-123 456",
        ])
        .await;
    assert_eq!(bad.code, Some(1), "{bad}");
    assert!(bad.stderr.contains("names a variable"), "{bad}");
    let bad = env
        .run(&[
            "model",
            "add",
            "x",
            "--api",
            "cohere",
            "--base-url",
            "https://h/v1",
        ])
        .await;
    assert!(bad.stderr.contains("is not one of"), "{bad}");
    assert_eq!(env.run(&["model", "default", "gpt-4o"]).await.code, Some(0));
    assert_eq!(env.run(&["model", "fallback", "mini"]).await.code, Some(0));
    let unknown = env.run(&["model", "default", "nope"]).await;
    assert!(unknown.stderr.contains("no model named nope"), "{unknown}");
    let list = env.run(&["model", "list"]).await;
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert!(
        lines[0].starts_with("gpt-4o") && lines[0].contains("default"),
        "{list}"
    );
    assert!(
        lines[0].contains("OPENAI_API_KEY") && lines[0].contains("in 2.5 out 10"),
        "{list}"
    );
    assert!(lines[0].contains("[tools,vision]"), "{list}");
    assert!(
        lines[1].starts_with("mini") && lines[1].contains("fallback 1"),
        "{list}"
    );
    assert_eq!(env.run(&["model", "remove", "mini"]).await.code, Some(0));
    assert!(!env.run(&["model", "list"]).await.stdout.contains("mini"));

    let store = env.store().await;
    let usage = switchboard::llm::Usage {
        input_tokens: 1_000_000,
        output_tokens: 100_000,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    };
    switchboard::models::record_usage(&store, Platform::Telegram, UserId(7), "gpt-4o", &usage, 1)
        .await;
    store.close().await;
    let report = env
        .run(&["usage", "--days", "7", "--user", "telegram:7"])
        .await;
    assert_eq!(report.code, Some(0), "{report}");
    // 1M in × $2.50 + 100k out × $10 = $3.50.
    assert!(
        report.stdout.contains("`gpt-4o`: 1 turns") && report.stdout.contains("$3.50"),
        "{report}"
    );
    let bad = env.run(&["usage", "--user", "7"]).await;
    assert!(bad.stderr.contains("use platform:id"), "{bad}");
}
