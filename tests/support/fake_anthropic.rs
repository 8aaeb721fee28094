//! A fake Anthropic Messages API on 127.0.0.1 that streams scripted replies as
//! real SSE event sequences and is as strict as the real API about requests.
//!
//! ```ignore
//! let fake = FakeAnthropic::start().await;
//! fake.require_api_key("sk-ant-test");
//! fake.push(Reply::text("Hello"));
//! fake.push(Reply::tool_uses([("toolu_1", "read_file", json!({"path": "a.txt"}))]));
//! let config = EndpointConfig::new(fake.base_url(), ModelInfo::new("claude-test", None));
//! // … run the code under test …
//! let requests = fake.requests(); // recorded request bodies, in order
//! ```
//!
//! Every request is checked like the real API would (headers, `model`,
//! `max_tokens`, alternating roles, `tool_use`/`tool_result` pairing, block
//! shapes, at most 4 `cache_control` breakpoints, tool schemas; see
//! `validate.rs`) and refused with 400 `invalid_request_error` (401
//! `authentication_error` for the key) in Anthropic's error shape. Replies come
//! from the queue ([`FakeAnthropic::push`]), else the responder, else a 400
//! "no scripted reply" so a test fails visibly.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;

use super::serve::model::{self, Script};
use super::serve::Served;

mod reply;
mod validate;

#[allow(unused_imports)]
pub use reply::{error_body, Reply};
use validate::validate;

/// The API version the fake accepts in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";

/// The fake server. Dropping it stops the server and releases stalled streams.
pub struct FakeAnthropic {
    served: Served,
    shared: Arc<Shared>,
}

type Shared = model::Shared<ServerState>;

#[derive(Default)]
struct ServerState {
    script: Script<Reply>,
    api_key: Option<String>,
    requests: Vec<Value>,
    headers: Vec<HeaderMap>,
    rejections: Vec<String>,
}

impl FakeAnthropic {
    /// Starts the server on 127.0.0.1 with an ephemeral port.
    pub async fn start() -> Self {
        let shared = Shared::new();
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .fallback(unknown_route);
        let served = shared.serve_loopback(app, "fake Anthropic").await;
        Self { served, shared }
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `LLM_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.served.addr)
    }

    /// Queues a reply; each valid request takes the oldest one.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().script.push(reply);
    }

    /// Answers valid requests when the queue is empty.
    pub fn set_responder<F>(&self, responder: F)
    where
        F: Fn(&Value) -> Reply + Send + Sync + 'static,
    {
        self.shared.lock().script.set_responder(responder);
    }

    /// Answers 401 unless the request carries `x-api-key: KEY`.
    pub fn require_api_key(&self, key: &str) {
        self.shared.lock().api_key = Some(key.to_owned());
    }

    /// Every request body that parsed as JSON, in arrival order (refused ones too).
    pub fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }

    /// The headers of each recorded request, in the same order.
    pub fn headers(&self) -> Vec<HeaderMap> {
        self.shared.lock().headers.clone()
    }

    /// The messages of every request the fake refused (400/401), in order.
    pub fn rejections(&self) -> Vec<String> {
        self.shared.lock().rejections.clone()
    }

    /// Waits (up to 10 s) until at least `n` requests were recorded; returns them.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Value> {
        self.shared
            .wait_for_requests(n, |state| state.requests.clone())
            .await
    }

    /// Scripted replies not yet taken.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.remaining()
    }
}

fn refuse(shared: &Shared, status: StatusCode, kind: &str, message: &str) -> Response {
    shared.lock().rejections.push(message.to_owned());
    (status, Json(error_body(kind, message))).into_response()
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(error) => {
            let message = format!("There was an issue with your request body: {error}");
            return refuse(
                &shared,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &message,
            );
        }
    };
    let api_key = {
        let mut state = shared.lock();
        state.requests.push(request.clone());
        state.headers.push(headers.clone());
        state.api_key.clone()
    };
    shared.request_seen();

    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(key) = api_key {
        match header("x-api-key") {
            Some(given) if given == key => {}
            Some(_) => {
                return refuse(
                    &shared,
                    StatusCode::UNAUTHORIZED,
                    "authentication_error",
                    "invalid x-api-key",
                );
            }
            None => {
                let message = "x-api-key header is required";
                return refuse(
                    &shared,
                    StatusCode::UNAUTHORIZED,
                    "authentication_error",
                    message,
                );
            }
        }
    }
    match header("anthropic-version") {
        Some(API_VERSION) => {}
        Some(other) => {
            let message = format!("anthropic-version: invalid version {other:?}");
            return refuse(
                &shared,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &message,
            );
        }
        None => {
            let message = "anthropic-version: header is required";
            return refuse(
                &shared,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                message,
            );
        }
    }
    if !header("content-type").is_some_and(|t| t.starts_with("application/json")) {
        let message = "content-type must be application/json";
        return refuse(
            &shared,
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            message,
        );
    }
    if let Err(message) = validate(&request) {
        return refuse(
            &shared,
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &message,
        );
    }

    match shared.next_reply(|state| &mut state.script, &request) {
        Some(reply) => reply.into_response(&request, shared.shutdown.clone()),
        None => {
            let message = "fake Anthropic: no scripted reply (queue empty and no responder set)";
            refuse(
                &shared,
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                message,
            )
        }
    }
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    let message =
        format!("fake Anthropic: unknown route {method} {uri} (base URL should end in /v1)");
    (
        StatusCode::NOT_FOUND,
        Json(error_body("not_found_error", &message)),
    )
        .into_response()
}
