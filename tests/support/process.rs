//! A real `switchboard run` process against the fakes, for the crash tests
//! and the soak bench: started with the environment a case needs, killed
//! with `SIGKILL` (or made to kill itself at a failure point), restarted on
//! the same data.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

/// The `switchboard` binary of this build (with its failure points).
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard"))
}

/// What a gateway process is started with.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    pub env: Vec<(String, String)>,
}

impl Setup {
    /// The environment every case shares: a data dir under `home`, the fake
    /// model, open access, and `database_url` (SQLite in the data dir when
    /// `None`).
    pub fn new(home: &Path, llm_base_url: &str, database_url: Option<&str>) -> Setup {
        let data = home.join("data");
        let db = database_url.map_or_else(
            || format!("sqlite://{}", data.join("switchboard.db").display()),
            str::to_owned,
        );
        let mut setup = Setup::default();
        setup
            .set("PATH", &std::env::var("PATH").unwrap_or_default())
            .set("HOME", &home.display().to_string())
            .set("DATA_DIR", &data.display().to_string())
            .set("DATABASE_URL", &db)
            .set("WORKSPACE_DIR", &home.join("ws").display().to_string())
            .set("LLM_BASE_URL", llm_base_url)
            .set("LLM_MODEL", "fake-model")
            .set("ACCESS_POLICY", "open")
            .set("RUST_LOG", "info");
        setup
    }

    pub fn set(&mut self, key: &str, value: &str) -> &mut Setup {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }
}

/// A running gateway process; its stderr is collected.
pub struct Gateway {
    pub child: Child,
    pub log: Arc<Mutex<String>>,
}

impl Gateway {
    /// Starts `switchboard run` with `setup`, killing itself at `failpoint`
    /// (`SWITCHBOARD_FAILPOINT`) when one is given.
    pub fn start(setup: &Setup, failpoint: Option<&str>, cwd: &Path) -> Gateway {
        Gateway::start_binary(&binary(), setup, failpoint, cwd)
    }

    /// Starts `switchboard run` of `binary` (another build, e.g. the
    /// release one) with `setup`.
    pub fn start_binary(
        binary: &Path,
        setup: &Setup,
        failpoint: Option<&str>,
        cwd: &Path,
    ) -> Gateway {
        let mut command = Command::new(binary);
        command
            .arg("run")
            .env_clear()
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &setup.env {
            command.env(k, v);
        }
        if let Some(point) = failpoint {
            command.env("SWITCHBOARD_FAILPOINT", point);
        }
        let mut child = command.spawn().expect("switchboard run starts");
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.stderr.take().expect("stderr piped");
        let sink = Arc::clone(&log);
        tokio::spawn(async move {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Gateway { child, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits for the process to end; `Some(signal)` when a signal ended it.
    pub async fn ended(&mut self, within: Duration) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(Ok(status)) => status.signal(),
            Ok(Err(e)) => panic!("waiting for the gateway: {e}"),
            Err(_) => panic!(
                "the gateway did not end within {within:?}; its log:\n{}",
                self.log()
            ),
        }
    }

    /// `kill -9`.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// SIGTERM, and waits for the graceful stop.
    pub async fn stop(&mut self) {
        if let Some(pid) = self.child.id() {
            let pid = rustix::process::Pid::from_raw(pid as i32);
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
        if tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .is_err()
        {
            self.kill().await;
        }
    }
}

/// A free TCP port on loopback (bound, then released for the process).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
