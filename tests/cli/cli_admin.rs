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
struct Env {
    dir: tempfile::TempDir,
}

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
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
    fn new() -> Env {
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

    async fn store(&self) -> Store {
        Store::open(&self.database_url()).await.unwrap()
    }

    /// Runs the binary with only `DATA_DIR`, `DATABASE_URL`, `PATH` and `HOME`
    /// set, in the temp dir (so no `.env` of the repository is read).
    async fn run(&self, args: &[&str]) -> Output {
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
        id: id.into(),
        session_id: format!("session-{id}"),
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
        store.insert_approval(a).await.unwrap();
    }
    store
        .decide_approval(
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
