//! The end-to-end harness: the real core (`switchboard::start`) on a temp dir,
//! wired to a fresh fake LLM and an in-memory [`TestChannel`].
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use switchboard::clock::{Clock, SystemClock};
use switchboard::store::{SessionId, SessionKey};
use switchboard::{Config, Running};
use switchboard_platform::{ChatId, Platform, PlatformAdapter, UserId};
use tokio_util::sync::CancellationToken;

use super::fake_llm::FakeLlm;
use super::test_channel::{Log, TestChannel, WAIT};

/// One running gateway with its fakes and its own directories.
pub struct Harness {
    pub llm: FakeLlm,
    pub channel: Arc<TestChannel>,
    pub running: Running,
    pub shutdown: CancellationToken,
    pub config: Config,
    dir: tempfile::TempDir,
}

impl Harness {
    /// Open access, 30 s approvals, 10 s model idle timeout, memory off.
    pub async fn start() -> Harness {
        Harness::with(&[]).await
    }

    /// Like [`Harness::start`] with extra or overriding variables.
    pub async fn with(vars: &[(&str, &str)]) -> Harness {
        Harness::with_channel(vars, TestChannel::new()).await
    }

    pub async fn with_channel(vars: &[(&str, &str)], channel: Arc<TestChannel>) -> Harness {
        let llm = FakeLlm::start().await;
        Harness::build(vars, llm, channel, Arc::new(SystemClock)).await
    }

    /// Like [`Harness::with`], on a fake LLM scripted before the gateway
    /// starts (it may call the model at once, e.g. for messages it takes over).
    #[allow(dead_code)]
    pub async fn with_llm(vars: &[(&str, &str)], llm: FakeLlm) -> Harness {
        Harness::build(vars, llm, TestChannel::new(), Arc::new(SystemClock)).await
    }

    /// Like [`Harness::with`], with approval deadlines on `clock`.
    #[allow(dead_code)]
    pub async fn with_clock(vars: &[(&str, &str)], clock: Arc<dyn Clock>) -> Harness {
        let llm = FakeLlm::start().await;
        Harness::build(vars, llm, TestChannel::new(), clock).await
    }

    async fn build(
        vars: &[(&str, &str)],
        llm: FakeLlm,
        channel: Arc<TestChannel>,
        clock: Arc<dyn Clock>,
    ) -> Harness {
        init_tracing();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut map: HashMap<String, String> = [
            ("LLM_BASE_URL", llm.base_url()),
            ("LLM_MODEL", "fake-model".to_owned()),
            ("DATA_DIR", data.display().to_string()),
            (
                "DATABASE_URL",
                format!("sqlite://{}", data.join("switchboard.db").display()),
            ),
            ("WORKSPACE_DIR", dir.path().join("ws").display().to_string()),
            ("ACCESS_POLICY", "open".to_owned()),
            ("APPROVAL_TIMEOUT", "30".to_owned()),
            ("LLM_IDLE_TIMEOUT_SECS", "10".to_owned()),
            // Memory recall and feedback buttons change what the model and the
            // chat see; their own tests turn them on.
            ("MEMORY_ENABLED", "false".to_owned()),
            ("FEEDBACK_BUTTONS", "false".to_owned()),
            // Activity lines change what answers read; their tests opt in.
            ("CHAT_VERBOSITY", "off".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        for (k, v) in vars {
            map.insert((*k).to_owned(), (*v).to_owned());
        }
        let mut config = Config::from_lookup(|k| map.get(k).cloned()).expect("test config");
        // As `capture_keys` does at start: the keys tools added from the chat may name.
        config.model_keys = map
            .iter()
            .filter(|(k, _)| k.starts_with("TOOL_SECRET_"))
            .map(|(k, v)| (k.clone(), switchboard_platform::Secret::new(v.clone())))
            .collect();
        let shutdown = CancellationToken::new();
        let adapters: Vec<Arc<dyn PlatformAdapter>> = vec![channel.clone()];
        let running = switchboard::start_with_clock(&config, adapters, shutdown.clone(), clock)
            .await
            .expect("switchboard starts");
        Harness {
            llm,
            channel,
            running,
            shutdown,
            config,
            dir,
        }
    }

    /// The workspace folder of user 1 (the user most tests talk as): where
    /// the file and exec tools of their turns act, and their uploads land.
    pub fn workspace(&self) -> PathBuf {
        self.folder(1)
    }

    /// The workspace folder of the test channel's `user`
    /// (`users/console-<user>`: the test channel is no local operator).
    #[allow(dead_code)]
    pub fn folder(&self, user: i64) -> PathBuf {
        self.root().join("users").join(format!("console-{user}"))
    }

    /// The whole workspace (`WORKSPACE_DIR`), as the operator sees it.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Writes a file into user 1's workspace folder.
    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        self.write_for(1, rel, content)
    }

    /// Writes a file into `user`'s workspace folder.
    pub fn write_for(&self, user: i64, rel: &str, content: &str) -> PathBuf {
        let path = self.folder(user).join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Waits until nothing is queued, running or in the background (bounded).
    pub async fn idle(&self) {
        if tokio::time::timeout(WAIT, self.running.idle())
            .await
            .is_err()
        {
            panic!("the gateway did not become idle\n{}", self.channel.log());
        }
    }

    /// Waits for `check` on the channel log.
    #[track_caller]
    pub fn wait_for<'a, F>(
        &'a self,
        what: &'a str,
        check: F,
    ) -> impl std::future::Future<Output = Log> + 'a
    where
        F: Fn(&Log) -> bool + 'a,
    {
        self.channel.wait_for(what, check)
    }

    /// Waits until the fake LLM received at least `n` requests; returns them all.
    pub async fn requests(&self, n: usize) -> Vec<Value> {
        let requests = self.llm.wait_for_requests(n).await;
        assert!(
            requests.len() >= n,
            "expected {n} LLM requests, got {}\n{}",
            requests.len(),
            self.channel.log()
        );
        requests
    }

    /// The session id of `user` in `chat` on the test platform.
    pub async fn session(&self, user: i64, chat: i64) -> SessionId {
        let key = SessionKey {
            platform: Platform::Console,
            chat: ChatId(chat),
            thread: None,
            user: UserId(user),
        };
        self.running.store.sessions().open(&key).await.unwrap()
    }

    /// Stops the gateway and waits for it; returns the temp dir (deleted when dropped)
    /// so a test can inspect what was left on disk.
    pub async fn stop(self) -> tempfile::TempDir {
        self.shutdown.cancel();
        let _ = tokio::time::timeout(WAIT, self.running.wait()).await;
        self.dir
    }
}

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// The messages of an LLM request.
pub fn messages(request: &Value) -> Vec<Value> {
    request["messages"].as_array().cloned().unwrap_or_default()
}

/// The names of the tools a request offers the model.
pub fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The content of the tool message answering `call_id` in a request.
#[track_caller]
pub fn tool_result(request: &Value, call_id: &str) -> String {
    messages(request)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no tool result for {call_id} in {request:#}"))
}

/// Tool messages of a request in order: (tool_call_id, content).
pub fn tool_results(request: &Value) -> Vec<(String, String)> {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
