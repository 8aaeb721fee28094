//! The real binary with piped stdio: an env of its own and a process whose
//! output is captured while it runs.
#![allow(dead_code)]

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

/// How long a run may take before the test calls it hung (a debug build on
/// a shared machine).
pub const HANG: Duration = Duration::from_secs(90);

/// A temp home for one binary run: data dir, database and workspace inside it.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub vars: Vec<(String, String)>,
}

impl Env {
    pub fn new(llm_base_url: &str) -> Env {
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
            ("APPROVAL_TIMEOUT".into(), "600".into()),
        ];
        Env { dir, vars }
    }

    pub fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    /// `switchboard chat` with `input` on stdin (then end of input), to its end.
    pub async fn chat(&self, input: &str) -> Finished {
        self.chat_in(&[], self.dir.path(), input).await
    }

    /// `switchboard <global options> chat`, started in `cwd`.
    pub async fn chat_in(&self, global: &[&str], cwd: &std::path::Path, input: &str) -> Finished {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        cmd.args(global)
            .arg("chat")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .envs(self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("the switchboard binary starts");
        let mut stdin: ChildStdin = child.stdin.take().unwrap();
        let out = collect(child.stdout.take().unwrap());
        let err = collect(child.stderr.take().unwrap());
        stdin.write_all(input.as_bytes()).await.unwrap();
        drop(stdin);
        finish(child, out, err).await
    }
}

type Captured = (Arc<Mutex<String>>, tokio::task::JoinHandle<()>);

fn collect(mut stream: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Captured {
    let text = Arc::new(Mutex::new(String::new()));
    let t = Arc::clone(&text);
    let reader = tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stream.read(&mut buf).await {
            t.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (text, reader)
}

async fn finish(mut child: Child, out: Captured, err: Captured) -> Finished {
    match tokio::time::timeout(HANG, child.wait()).await {
        Ok(status) => {
            let _ = tokio::time::timeout(HANG, out.1).await;
            let _ = tokio::time::timeout(HANG, err.1).await;
            Finished {
                status: status.unwrap(),
                stdout: out.0.lock().unwrap().clone(),
                stderr: err.0.lock().unwrap().clone(),
            }
        }
        Err(_) => {
            let _ = child.kill().await;
            panic!(
                "the process hung (killed)\n--- stdout ---\n{}\n--- stderr ---\n{}",
                out.0.lock().unwrap(),
                err.0.lock().unwrap()
            );
        }
    }
}

pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
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
