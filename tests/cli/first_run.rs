//! First run as a new user meets it: `.env.example` copied as it is, the
//! `--env-file` / `--data-dir` flags and `--help` of the real binary, plain
//! logs on a pipe, and pairing both ways through `switchboard run` against the
//! fake Telegram (the code logged for the operator, the user told of the
//! approval) and the links `run` prints at start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::fake_discord::{FakeDiscord, APP_ID, TOKEN as DISCORD_TOKEN};
use support::fake_telegram::{FakeTelegram, FakeUser, Where, BOT_USERNAME, TOKEN};
use switchboard::config::Config;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

/// Generous: the binary is a debug build and other builds share the machine.
const HANG: Duration = Duration::from_secs(90);

fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// The binary with nothing from the test's environment but `PATH`, run in `dir`
/// (so no `.env` of the repository is read).
pub(crate) fn binary(dir: &Path, vars: &[(&str, String)], args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::time::timeout(HANG, cmd.output())
        .await
        .expect("the command finished")
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------- .env.example

/// `.env.example` as dotenv reads it, with the model set (its placeholders
/// stand for the user's endpoint).
fn example_vars() -> HashMap<String, String> {
    dotenvy::from_path_iter(repo_file(".env.example"))
        .unwrap()
        .map(|item| item.unwrap())
        .collect()
}

#[test]
fn env_example_parses_and_derives_every_state_path_from_data_dir() {
    let mut vars = example_vars();
    assert!(
        !vars.contains_key("RUST_LOG"),
        "RUST_LOG in .env.example would override chat's quiet default"
    );
    for (k, v) in &vars {
        assert!(
            !v.contains("./data/"),
            "{k}={v} is pinned under ./data: changing DATA_DIR alone would split the state"
        );
    }
    vars.insert("DATA_DIR".into(), "/srv/switchboard".into());
    let config = Config::from_lookup(|k| vars.get(k).cloned()).expect("the example is valid");
    assert_eq!(config.data_dir, Path::new("/srv/switchboard"));
    assert_eq!(
        config.database_url,
        "sqlite:///srv/switchboard/switchboard.db"
    );
    assert_eq!(
        config.workspace_dir,
        Path::new("/srv/switchboard/workspace")
    );
}

// ---------------------------------------------------------------- flags and help

#[tokio::test]
async fn every_subcommand_help_lists_its_options_and_points_to_the_variables() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["chat", "--help"][..],
        &["run", "--help"],
        &["doctor", "--help"],
        &["tasks", "--help"],
        &["pair", "approve", "--help"],
    ] {
        // No configuration at all: help needs none.
        let out = output(binary(dir.path(), &[], args)).await;
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        for needle in [
            "--env-file <FILE>",
            "--data-dir <DIR>",
            ".env.example",
            "DATA_DIR",
        ] {
            assert!(
                stdout.contains(needle),
                "{args:?} --help lacks {needle:?}:\n{stdout}"
            );
        }
    }
    let chat = output(binary(dir.path(), &[], &["chat", "--help"])).await;
    assert!(text(&chat.stdout).contains("LLM_BASE_URL and LLM_MODEL (required)"));
    let tasks = output(binary(dir.path(), &[], &["tasks", "--help"])).await;
    assert!(text(&tasks.stdout).contains("--status <STATUS>"));
}

/// The model variables from a file other than `./.env`, the state in the
/// `--data-dir` directory even with another `DATA_DIR` in the environment.
#[tokio::test]
async fn env_file_and_data_dir_flags_choose_the_configuration_and_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("switchboard.env");
    std::fs::write(
        &env_file,
        "LLM_BASE_URL=http://127.0.0.1:9/v1\nLLM_MODEL=from-the-env-file\n",
    )
    .unwrap();
    // A `.env` in the working directory that would fail the start if read.
    std::fs::write(dir.path().join(".env"), "LOG_FORMAT=bogus\n").unwrap();
    let state = dir.path().join("state");
    let elsewhere = dir.path().join("elsewhere");
    let vars = [("DATA_DIR", elsewhere.display().to_string())];
    let env_file_arg = env_file.display().to_string();
    let state_arg = state.display().to_string();

    let migrate = output(binary(
        dir.path(),
        &vars,
        &[
            "--env-file",
            &env_file_arg,
            "--data-dir",
            &state_arg,
            "migrate",
        ],
    ))
    .await;
    assert!(
        migrate.status.success(),
        "{}\n{}",
        text(&migrate.stdout),
        text(&migrate.stderr)
    );
    assert!(
        state.join("switchboard.db").is_file(),
        "the database is in --data-dir"
    );
    assert!(
        !elsewhere.exists(),
        "DATA_DIR from the environment lost to --data-dir"
    );
    assert!(text(&migrate.stdout).contains(&state_arg));

    // The flag after the subcommand works too, and the file's model is used.
    let model = output(binary(
        dir.path(),
        &vars,
        &["model", "--env-file", &env_file_arg],
    ))
    .await;
    assert!(model.status.success(), "{}", text(&model.stderr));
    assert!(text(&model.stdout).contains("from-the-env-file"));

    // Without --env-file the broken ./.env is read, and says so.
    let model_vars = [
        ("LLM_BASE_URL", "http://127.0.0.1:9/v1".to_owned()),
        ("LLM_MODEL", "m".to_owned()),
    ];
    let plain = output(binary(dir.path(), &model_vars, &["model"])).await;
    assert!(!plain.status.success());
    assert!(text(&plain.stderr).contains("LOG_FORMAT"));

    let missing = output(binary(
        dir.path(),
        &[],
        &["--env-file", "no-such.env", "model"],
    ))
    .await;
    assert!(!missing.status.success());
    let stderr = text(&missing.stderr);
    assert!(
        stderr.contains("--env-file no-such.env") && stderr.contains("no such file"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------- run

/// `switchboard run` with its stderr captured as it arrives.
pub(crate) struct Gateway {
    pub(crate) child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Gateway {
    pub(crate) fn spawn(dir: &Path, vars: &[(&str, String)]) -> Gateway {
        let mut child = binary(dir, vars, &["run"]).spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Gateway { child, stderr }
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub(crate) async fn wait_for_log(&mut self, needle: &str) {
        let found = tokio::time::timeout(HANG, async {
            while !self.stderr().contains(needle) {
                if let Ok(Some(status)) = self.child.try_wait() {
                    panic!("run exited with {status}:\n{}", self.stderr());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "the log never showed {needle:?}:\n{}",
            self.stderr()
        );
    }
}

/// The state and the model, shared by `run` and the operator's commands.
pub(crate) fn base_vars(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("LLM_BASE_URL", "http://127.0.0.1:9/v1".to_owned()),
        ("LLM_MODEL", "fake-model".to_owned()),
        ("DATA_DIR", dir.join("data").display().to_string()),
    ]
}

fn no_ansi_nor_debug(log: &str) {
    assert!(!log.contains('\u{1b}'), "ANSI codes in a piped log:\n{log}");
    assert!(
        !log.contains("Some("),
        "debug formatting in the log:\n{log}"
    );
}

#[tokio::test]
async fn run_logs_the_pairing_code_and_tells_the_user_when_the_operator_approves() {
    let telegram = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut vars = base_vars(dir.path());
    vars.push(("TELEGRAM_BOT_TOKEN", TOKEN.to_owned()));
    vars.push(("TELEGRAM_API_URL", telegram.api_url()));
    let mut run = Gateway::spawn(dir.path(), &vars);
    run.wait_for_log(&format!("https://t.me/{BOT_USERNAME}"))
        .await;

    let ann = FakeUser::new(4242, "Ann");
    telegram.message(Where::Dm, &ann, "hello?");
    assert!(
        telegram
            .wait_until(HANG, |t| t
                .bot_messages(4242)
                .iter()
                .any(|m| m.text.contains("pairing code")))
            .await,
        "Ann got no pairing code:\n{}",
        run.stderr()
    );
    let told = telegram.bot_messages(4242)[0].text.clone();
    let code = told
        .split_whitespace()
        .find(|w| {
            w.len() == 8
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .unwrap_or_else(|| panic!("no code in {told:?}"))
        .to_owned();
    // The operator learns the code from the log, not only from `pair list`.
    run.wait_for_log(&format!("switchboard pair approve {code}"))
        .await;
    let line = run
        .stderr()
        .lines()
        .find(|l| l.contains("pairing requested"))
        .unwrap()
        .to_owned();
    assert!(line.contains("4242") && line.contains("Ann"), "{line}");

    let approve = output(binary(dir.path(), &vars, &["pair", "approve", &code])).await;
    assert!(approve.status.success(), "{}", text(&approve.stderr));
    assert!(
        telegram
            .wait_until(HANG, |t| t
                .bot_messages(4242)
                .iter()
                .any(|m| m.text.contains("approved")))
            .await,
        "Ann was never told of the approval:\n{}",
        run.stderr()
    );
    // Told once, however many housekeeping passes follow.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let notices = telegram
        .bot_messages(4242)
        .iter()
        .filter(|m| m.text.contains("approved"))
        .count();
    assert_eq!(notices, 1);
    no_ansi_nor_debug(&run.stderr());
}

#[tokio::test]
async fn run_prints_the_discord_invite_url_at_start() {
    let discord = FakeDiscord::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut vars = base_vars(dir.path());
    vars.push(("DISCORD_BOT_TOKEN", DISCORD_TOKEN.to_owned()));
    vars.push(("DISCORD_API_URL", discord.api_url.clone()));
    let mut run = Gateway::spawn(dir.path(), &vars);
    run.wait_for_log(&format!(
        "https://discord.com/oauth2/authorize?client_id={APP_ID}&scope=bot+applications.commands&permissions="
    ))
    .await;
    no_ansi_nor_debug(&run.stderr());
}

// ---------------------------------------------------------------- chat on a terminal

/// `chat` on a pseudo-terminal (util-linux `script`), where stderr is the
/// screen the conversation is on: a warning at start (a skill file without
/// front matter) goes to `DATA_DIR/chat.log`, not into the transcript.
#[tokio::test]
async fn chat_on_a_terminal_writes_warnings_to_the_log_file_not_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(skills.join("broken.md"), "no front matter here\n").unwrap();
    let mut vars = base_vars(dir.path());
    vars.push(("SKILLS_DIR", skills.display().to_string()));
    let command = format!("{} chat", env!("CARGO_BIN_EXE_switchboard"));
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &command, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("util-linux `script` runs");
    let transcript = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stdout.take().unwrap();
    let sink = transcript.clone();
    let reader = tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let log = dir.path().join("data").join("chat.log");
    let warned = tokio::time::timeout(HANG, async {
        loop {
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            if logged.contains("skill skipped")
                || transcript.lock().unwrap().contains("skill skipped")
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        warned.is_ok(),
        "no warning anywhere:\n{}",
        transcript.lock().unwrap()
    );
    // Ctrl-D at the prompt: end of input on the terminal.
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"\x04")
        .await
        .unwrap();
    let status = tokio::time::timeout(HANG, child.wait()).await;
    let _ = tokio::time::timeout(HANG, reader).await;
    let transcript = transcript.lock().unwrap().clone();
    assert!(status.is_ok(), "chat did not end on Ctrl-D:\n{transcript}");
    assert!(
        !transcript.contains("skill skipped") && !transcript.contains("WARN"),
        "a warning in the chat transcript:\n{transcript}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("skill skipped") && logged.contains("broken.md"),
        "{logged}"
    );
    assert!(
        !logged.contains('\u{1b}'),
        "ANSI codes in the log file:\n{logged}"
    );
}

/// `chat` piped (stdout and stderr one transcript, as `2>&1` makes them): a
/// warning at start still goes to `DATA_DIR/chat.log`, never into it.
#[tokio::test]
async fn piped_chat_writes_warnings_to_the_log_file_not_the_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(skills.join("broken.md"), "no front matter here\n").unwrap();
    let mut vars = base_vars(dir.path());
    vars.push(("SKILLS_DIR", skills.display().to_string()));
    let mut cmd = binary(dir.path(), &vars, &["chat"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"/help\n")
        .await
        .unwrap();
    drop(stdin);
    let done = tokio::time::timeout(HANG, child.wait_with_output())
        .await
        .expect("chat ends at the end of its input")
        .unwrap();
    let (stdout, stderr) = (text(&done.stdout), text(&done.stderr));
    assert!(done.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("/stop"), "the help was answered:\n{stdout}");
    for stream in [&stdout, &stderr] {
        assert!(
            !stream.contains("skill skipped") && !stream.contains("WARN"),
            "a warning in the transcript:\n{stream}"
        );
    }
    let logged = std::fs::read_to_string(dir.path().join("data").join("chat.log")).unwrap();
    assert!(
        logged.contains("skill skipped") && logged.contains("broken.md"),
        "{logged}"
    );
    no_ansi_nor_debug(&logged);
}
