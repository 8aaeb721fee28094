//! The real `switchboard chat` killed while a card is open: the next `chat`
//! shows the card again, and a key on it decides it and resumes the turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use support::e2e::messages;
use support::fake_llm::{FakeLlm, Reply};
use switchboard::store::Store;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

/// How long a step may take before the test calls it hung (a debug build on
/// a shared machine).
const HANG: Duration = Duration::from_secs(90);

/// A running `switchboard chat` on piped stdin, its stdout collected.
struct Chat {
    child: Child,
    stdout: Arc<Mutex<String>>,
}

impl Chat {
    fn spawn(home: &Path, llm: &FakeLlm) -> Chat {
        let data = home.join("data");
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .arg("chat")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("LLM_BASE_URL", llm.base_url())
            .env("LLM_MODEL", "fake-model")
            .env("DATA_DIR", &data)
            .env(
                "DATABASE_URL",
                format!("sqlite://{}", data.join("switchboard.db").display()),
            )
            .env("WORKSPACE_DIR", home.join("ws"))
            .env("APPROVAL_TIMEOUT", "600")
            .current_dir(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stdout.take().unwrap();
        let sink = Arc::clone(&stdout);
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
        Chat { child, stdout }
    }

    fn output(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    async fn write(&mut self, text: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn wait_for(&self, needle: &str) {
        let found = tokio::time::timeout(HANG, async {
            while !self.output().contains(needle) {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "stdout never showed {needle:?}:\n{}",
            self.output()
        );
    }
}

#[tokio::test]
async fn a_restarted_console_shows_its_open_card_and_a_key_on_it_runs_the_command() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| {
        let last = messages(request).last().cloned().unwrap_or_default();
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
    let home = tempfile::tempdir().unwrap();
    let mut first = Chat::spawn(home.path(), &llm);
    first.write("please run it\n").await;
    first.wait_for("Approval needed").await;

    // The card is stored and its turn paused; then the process dies.
    let url = format!(
        "sqlite://{}",
        home.path().join("data/switchboard.db").display()
    );
    let store = Store::open(&url).await.unwrap();
    let id = tokio::time::timeout(HANG, async {
        loop {
            let pending = store.approvals().pending(chrono::Utc::now()).await.unwrap();
            if let Some(a) = pending.first() {
                if store.turns().origin(&a.id).await.unwrap().is_some() {
                    return a.id.clone();
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    })
    .await
    .expect("the card's turn was paused");
    first.child.kill().await.unwrap();
    store.close().await;
    assert!(!home.path().join("ws/proof.txt").exists());

    let mut second = Chat::spawn(home.path(), &llm);
    second.wait_for(id.short()).await;
    assert!(
        second.output().contains("Approval needed"),
        "the card is shown again, not only mentioned:\n{}",
        second.output()
    );
    second.write("y\n").await;
    second.child.stdin = None;
    second.wait_for("Done. Tool said:").await;
    let status = tokio::time::timeout(HANG, second.child.wait())
        .await
        .expect("chat exits at end of input")
        .unwrap();
    assert!(status.success(), "{}", second.output());
    assert_eq!(
        std::fs::read_to_string(home.path().join("ws/proof.txt")).unwrap_or_default(),
        "approved\n",
        "{}",
        second.output()
    );
}
