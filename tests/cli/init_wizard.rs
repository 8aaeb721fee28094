//! `switchboard init` against the fakes: non-interactive with flags and
//! INIT_* variables (tokens checked with getMe and /users/@me, the model
//! endpoint's models listed, `.env` written 0600 with the old one kept, no
//! secret printed), answers piped to its questions, and a refused token that
//! writes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use support::fake_discord::{FakeDiscord, APP_ID, TOKEN as DISCORD_TOKEN};
use support::fake_llm::FakeLlm;
use support::fake_telegram::{FakeTelegram, BOT_USERNAME, TOKEN};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

const HANG: Duration = Duration::from_secs(90);

async fn init(
    dir: &Path,
    vars: &[(&str, &str)],
    args: &[&str],
    stdin: Option<&str>,
) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    cmd.arg("init")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(vars.iter().copied())
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        let mut input = child.stdin.take().unwrap();
        input.write_all(text.as_bytes()).await.unwrap();
    }
    let out = tokio::time::timeout(HANG, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn init_checks_everything_and_writes_a_private_env_without_echoing_secrets() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let discord = FakeDiscord::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "OLD=1\n").unwrap();
    let base = llm.base_url();
    let (code, out, err) = init(
        dir.path(),
        &[
            ("INIT_TELEGRAM_BOT_TOKEN", TOKEN),
            ("INIT_DISCORD_BOT_TOKEN", DISCORD_TOKEN),
            ("INIT_LLM_API_KEY", "sk-test-secret-123"),
        ],
        &[
            "--yes",
            "--llm-base-url",
            &base,
            "--llm-model",
            "fake-model",
            "--telegram-api-url",
            &tg.api_url(),
            "--discord-api-url",
            &discord.api_url,
            "--access",
            "allowlist",
            "--operator",
            "telegram:900",
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("models: fake-model"), "{out}");
    assert!(
        out.contains(&format!("https://t.me/{BOT_USERNAME}")),
        "{out}"
    );
    assert!(out.contains(&format!("client_id={APP_ID}")), "{out}");
    for secret in [TOKEN, DISCORD_TOKEN, "sk-test-secret-123"] {
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "a secret was printed"
        );
    }
    let env = std::fs::read_to_string(dir.path().join(".env")).unwrap();
    for line in [
        format!("LLM_BASE_URL={base}"),
        "LLM_MODEL=fake-model".to_owned(),
        "LLM_API_KEY=sk-test-secret-123".to_owned(),
        format!("TELEGRAM_BOT_TOKEN={TOKEN}"),
        format!("DISCORD_BOT_TOKEN={DISCORD_TOKEN}"),
        "ACCESS_POLICY=allowlist".to_owned(),
        "TELEGRAM_ALLOWED_USERS=900".to_owned(),
        "TELEGRAM_APPROVERS=900".to_owned(),
    ] {
        assert!(env.lines().any(|l| l == line), "{line} missing:\n{env}");
    }
    let mode = std::fs::metadata(dir.path().join(".env"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let backups: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".env.bak-"))
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(&backups[0])).unwrap(),
        "OLD=1\n"
    );
}

#[tokio::test]
async fn init_asks_when_run_without_flags_and_a_refused_token_writes_nothing() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Base URL, protocol, key, model, Telegram token, Discord token, access, operator.
    let answers = format!("{}\n\n\nfake-model\n\n\nopen\n\n", llm.base_url());
    let (code, out, err) = init(
        dir.path(),
        &[],
        &["--telegram-api-url", &tg.api_url()],
        Some(&answers),
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("Model endpoint base URL"), "{out}");
    let env = std::fs::read_to_string(dir.path().join(".env")).unwrap();
    assert!(
        env.contains("LLM_MODEL=fake-model") && env.contains("ACCESS_POLICY=open"),
        "{env}"
    );
    assert!(!env.contains("TELEGRAM_BOT_TOKEN"), "{env}");

    let other = tempfile::tempdir().unwrap();
    let (code, _out, err) = init(
        other.path(),
        &[("INIT_TELEGRAM_BOT_TOKEN", "123:wrong-token")],
        &[
            "--yes",
            "--llm-base-url",
            &llm.base_url(),
            "--llm-model",
            "fake-model",
            "--telegram-api-url",
            &tg.api_url(),
        ],
        None,
    )
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("the Telegram token was refused"), "{err}");
    assert!(!err.contains("wrong-token"), "the token was printed: {err}");
    assert!(!other.path().join(".env").exists());
}
