//! A side effect the crash tests count: an HTTP endpoint on loopback that an
//! operator-declared HTTP tool (`record_order`) posts to. Every POST is one
//! effect of the tool, counted by the item it names.

use axum::extract::State;
use axum::routing::post;
use axum::Json;
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The endpoint and what it received.
pub struct Effects {
    pub addr: SocketAddr,
    counts: Arc<Mutex<HashMap<String, usize>>>,
}

impl Effects {
    pub async fn start() -> Effects {
        let counts: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let app = axum::Router::new()
            .route("/order", post(order))
            .with_state(Arc::clone(&counts));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Effects { addr, counts }
    }

    /// How many times `item` was ordered.
    pub fn count(&self, item: &str) -> usize {
        self.counts.lock().unwrap().get(item).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.counts.lock().unwrap().values().sum()
    }

    /// Writes the `HTTP_TOOLS_FILE` declaring `record_order` (a POST the
    /// operator marked as needing no card) into `dir`; returns its path.
    pub fn tools_file(&self, dir: &Path) -> PathBuf {
        let path = dir.join("http_tools.json");
        let tools = serde_json::json!({"tools": [{
            "name": "record_order",
            "description": "Records an order for the item",
            "method": "POST",
            "url": format!("http://{}/order", self.addr),
            "requires_approval": false,
            "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}
        }]});
        std::fs::write(&path, tools.to_string()).unwrap();
        path
    }
}

async fn order(
    State(counts): State<Arc<Mutex<HashMap<String, usize>>>>,
    Json(body): Json<Value>,
) -> Json<Value> {
    let item = body["item"].as_str().unwrap_or("?").to_owned();
    *counts.lock().unwrap().entry(item).or_default() += 1;
    Json(serde_json::json!({"ok": true}))
}

/// The model of the crash tests: "order N" makes it call `record_order`
/// with item N, and the tool's result makes it answer "done N".
pub fn order_responder(request: &Value) -> super::fake_llm::Reply {
    use super::fake_llm::Reply;
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let item = super::fake_llm::last_user_text(request)
        .and_then(|t| {
            let at = t.find("order ")?;
            let digits: String = t[at + 6..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            (!digits.is_empty()).then_some(digits)
        })
        .unwrap_or_else(|| "?".into());
    match messages.last() {
        Some(last) if last["role"] == "tool" => Reply::text(&format!("done {item}")),
        _ => Reply::tool_calls([(
            format!("call_{item}"),
            "record_order",
            serde_json::json!({ "item": item }),
        )]),
    }
}
