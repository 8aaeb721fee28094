//! A small client for Chromium's DevTools protocol, for the web console's
//! browser test: it starts headless Chromium on a port it picks
//! (`--remote-debugging-port=0`, read back from `DevToolsActivePort`), opens
//! a page and speaks JSON over its WebSocket. Every console error, uncaught
//! exception and log error the page produces is kept for the test to check.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

const START: Duration = Duration::from_secs(30);
const CALL: Duration = Duration::from_secs(20);

/// A running headless Chromium (killed when dropped).
pub struct Browser {
    _child: Child,
    _dir: tempfile::TempDir,
    port: u16,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// One page (tab) of the browser.
pub struct Page {
    out: mpsc::UnboundedSender<String>,
    next: AtomicU64,
    pending: Pending,
    events: Arc<Mutex<Vec<Value>>>,
}

/// The browser binary: `$CHROMIUM`, else the first of the usual names found
/// on `PATH`; `None` when there is none.
pub fn binary() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    ["chromium", "chromium-browser", "google-chrome", "chrome"]
        .into_iter()
        .flat_map(|name| path.split(':').map(move |dir| Path::new(dir).join(name)))
        .find(|candidate| candidate.is_file())
}

impl Browser {
    /// Starts Chromium at `bin` (from [`binary`]); a browser that cannot
    /// start fails the test, saying why.
    pub async fn launch(bin: &Path) -> Browser {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(bin)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--window-size=1200,900",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", dir.path().display()))
            .arg("about:blank")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let file = dir.path().join("DevToolsActivePort");
        let deadline = tokio::time::Instant::now() + START;
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&file) {
                if let Some(port) = text.lines().next().and_then(|l| l.trim().parse().ok()) {
                    break port;
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    use tokio::io::AsyncReadExt;
                    let _ = stderr.read_to_string(&mut err).await;
                }
                panic!(
                    "Chromium ({}) exited at start ({status}); the browser test cannot run:\n{err}",
                    bin.display()
                );
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "Chromium ({}) did not open its DevTools port within {START:?}",
                bin.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        Browser {
            _child: child,
            _dir: dir,
            port,
        }
    }

    /// Opens a new blank page and connects to it.
    pub async fn page(&self) -> Page {
        let target: Value = reqwest::Client::new()
            .put(format!(
                "http://127.0.0.1:{}/json/new?about:blank",
                self.port
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let ws_url = target["webSocketDebuggerUrl"].as_str().unwrap().to_owned();
        let (ws, _) = tokio_tungstenite::connect_async(ws_url.as_str())
            .await
            .unwrap();
        let (mut sink, mut stream) = ws.split();
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(text) = rx.recv().await {
                if sink.send(Message::Text(text)).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let events: Arc<Mutex<Vec<Value>>> = Arc::default();
        let (p, e) = (Arc::clone(&pending), Arc::clone(&events));
        tokio::spawn(async move {
            while let Some(Ok(msg)) = stream.next().await {
                let Message::Text(text) = msg else { continue };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                match value["id"].as_u64() {
                    Some(id) => {
                        if let Some(tx) = p.lock().unwrap().remove(&id) {
                            let _ = tx.send(value);
                        }
                    }
                    None => e.lock().unwrap().push(value),
                }
            }
        });
        let page = Page {
            out,
            next: AtomicU64::new(1),
            pending,
            events,
        };
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            page.call(domain, json!({})).await;
        }
        // Every CSP violation a page reports, kept in the page itself.
        page.call(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": "window.__csp = []; document.addEventListener('securitypolicyviolation', function (e) { window.__csp.push(e.violatedDirective + ' ' + e.blockedURI); });" }),
        )
        .await;
        page
    }
}

impl Page {
    /// Calls a DevTools method; a protocol error fails the test.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        let request = json!({ "id": id, "method": method, "params": params });
        self.out.send(request.to_string()).unwrap();
        let reply = tokio::time::timeout(CALL, rx)
            .await
            .unwrap_or_else(|_| panic!("{method} got no answer"))
            .unwrap();
        assert!(reply.get("error").is_none(), "{method}: {reply}");
        reply["result"].clone()
    }

    /// Evaluates `expression` in the page; returns its value.
    pub async fn eval(&self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Waits until `expression` is truthy in the page.
    pub async fn wait_for(&self, what: &str, expression: &str) {
        let deadline = tokio::time::Instant::now() + CALL;
        loop {
            let result = self
                .call(
                    "Runtime.evaluate",
                    json!({ "expression": expression, "returnByValue": true }),
                )
                .await;
            if result["result"]["value"].as_bool() == Some(true) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what} in the browser"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Loads `url` and waits until the document is complete.
    pub async fn goto(&self, url: &str) {
        self.call("Page.navigate", json!({ "url": url })).await;
        let path = url::Url::parse(url).unwrap().path().to_owned();
        self.wait_for(
            &format!("{url} to load"),
            &format!(
                "document.readyState === 'complete' && location.pathname === {}",
                json!(path)
            ),
        )
        .await;
    }

    /// Saves a PNG of the page to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let shot = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// Console errors, uncaught exceptions, log errors and CSP violations
    /// since the last call.
    pub async fn problems(&self) -> Vec<String> {
        let events = std::mem::take(&mut *self.events.lock().unwrap());
        let mut out: Vec<String> = events
            .iter()
            .filter_map(|e| {
                let params = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.consoleAPICalled"
                        if matches!(params["type"].as_str(), Some("error" | "assert")) =>
                    {
                        Some(format!("console: {}", params["args"]))
                    }
                    "Runtime.exceptionThrown" => Some(format!("exception: {params}")),
                    "Log.entryAdded" if params["entry"]["level"] == "error" => {
                        let entry = &params["entry"];
                        Some(format!("log: {} {}", entry["text"], entry["url"]))
                    }
                    _ => None,
                }
            })
            .collect();
        let csp = self.eval("(window.__csp || []).join('\\n')").await;
        if let Some(v) = csp.as_str().filter(|v| !v.is_empty()) {
            out.push(format!("CSP: {v}"));
        }
        out
    }
}
