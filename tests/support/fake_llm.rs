//! A fake OpenAI-compatible chat-completions server on 127.0.0.1 that streams
//! scripted replies over real SSE and is as strict as the real API about requests.
//!
//! ```ignore
//! let llm = FakeLlm::start().await;
//! llm.push(Reply::text("Hello world"));
//! llm.push(Reply::tool_calls([("call_1", "read_file", json!({"path": "a.txt"}))]));
//! let config = EndpointConfig::new(llm.base_url(), ModelInfo::new("fake-model", None));
//! // … run the code under test …
//! let requests = llm.requests().await; // recorded request bodies, in order
//! ```
//!
//! Every request is checked like the real API would (model, messages, roles,
//! tool-call pairing, `stream: true`, `tool_choice` only with `tools`) and answered
//! with a 400 in OpenAI's error shape when wrong. Replies come from the queue
//! ([`FakeLlm::push`]), else from the responder ([`FakeLlm::set_responder`]), else a
//! 400 "fake LLM: no scripted reply" so a test fails visibly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::{json, Value};

use super::serve::model::{self, Script};
use super::serve::Served;

mod reply;
mod validate;

// Each test crate uses a different subset of these.
#[allow(unused_imports)]
pub use reply::{chunk, error_body, usage_chunk, Reply, FAKE_MODEL};
use validate::validate;

/// The fake server. Dropping it stops the server and releases stalled streams.
pub struct FakeLlm {
    served: Served,
    shared: Arc<Shared>,
}

type Shared = model::Shared<ServerState>;

#[derive(Default)]
struct ServerState {
    script: Script<Reply>,
    rejected_params: Vec<String>,
    rejected_message_fields: Vec<String>,
    context_window: Option<u64>,
    api_key: Option<String>,
    requests: Vec<Value>,
    /// Off: requests are answered but not kept (a bench measuring the
    /// memory of the process the fake shares).
    forget_requests: bool,
    authorizations: Vec<Option<String>>,
    /// `Some` once [`FakeLlm::time_handling`] was called.
    handling: Option<Vec<Duration>>,
    /// The model is text-only: image parts are refused (like gpt-3.5-turbo).
    no_vision: bool,
    /// The gateway's live state checks (see [`LIVE_CHECK_MARK`]): kept and
    /// answered apart, so the turns' own script is not taken by them.
    live_checks: Vec<Value>,
    check_script: Script<Reply>,
}

/// How the gateway's live state check begins its system prompt.
pub const LIVE_CHECK_MARK: &str = "You classify ONE user request for an assistant's planner";

/// A live state check naming no kind: what the fake answers unless told.
pub const NO_LIVE_STATE: &str = r#"{"reads": [], "changes": []}"#;

fn is_live_check(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with(LIVE_CHECK_MARK))
}

impl FakeLlm {
    /// Starts the server on 127.0.0.1 with an ephemeral port.
    #[allow(clippy::expect_used)] // a fixture that cannot bind loopback cannot run any test
    pub async fn start() -> Self {
        Self::try_start()
            .await
            .expect("fake LLM: cannot bind 127.0.0.1")
    }

    /// Like [`FakeLlm::start`], reporting a bind failure.
    pub async fn try_start() -> std::io::Result<Self> {
        Self::try_start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts the server on a given address (the demo model uses a fixed port).
    pub async fn try_start_on(addr: SocketAddr) -> std::io::Result<Self> {
        let shared = Shared::new();
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/models", get(models))
            .fallback(unknown_route);
        let served = shared.serve(addr, app, "fake LLM").await?;
        Ok(Self { served, shared })
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `EndpointConfig::base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.served.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.served.addr
    }

    /// Serves a text-only model: requests with image parts get the 400 the
    /// real API gives such models.
    pub fn without_vision(&self) {
        self.shared.lock().no_vision = true;
    }

    /// Queues a reply; each valid request takes the oldest one.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().script.push(reply);
    }

    /// Answers requests when the queue is empty (benches, demos, echo bots).
    pub fn set_responder<F>(&self, responder: F)
    where
        F: Fn(&Value) -> Reply + Send + Sync + 'static,
    {
        self.shared.lock().script.set_responder(responder);
    }

    /// Answers 400 "Unrecognized request argument supplied: NAME" to any request
    /// carrying one of these top-level parameters (like older vLLM / llama.cpp).
    pub fn reject_params(&self, params: &[&str]) {
        let mut state = self.shared.lock();
        state
            .rejected_params
            .extend(params.iter().map(|p| (*p).to_owned()));
    }

    /// Answers 400 to any request whose messages carry one of these fields, in
    /// Groq's words ("property 'reasoning_content' is unsupported"), like the
    /// strict hosts (Groq, Cerebras) that refuse what OpenAI ignores.
    pub fn reject_message_fields(&self, fields: &[&str]) {
        let mut state = self.shared.lock();
        state
            .rejected_message_fields
            .extend(fields.iter().map(|f| (*f).to_owned()));
    }

    /// Answers 400 `context_length_exceeded`, as OpenAI does, to a request
    /// whose messages and tools come to more than `tokens` (counted as the
    /// JSON text's length / 4, above the client's own estimate).
    pub fn set_context_window(&self, tokens: u64) {
        self.shared.lock().context_window = Some(tokens);
    }

    /// Answers 401 unless the request carries `Authorization: Bearer KEY`.
    pub fn require_api_key(&self, key: &str) {
        self.shared.lock().api_key = Some(key.to_owned());
    }

    /// Every request body that parsed as JSON, in arrival order (rejected ones too).
    /// From now on, requests are answered but not kept.
    pub fn forget_requests(&self) {
        self.shared.lock().forget_requests = true;
    }

    pub async fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }

    /// The `Authorization` header of each recorded request, in the same order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared.lock().authorizations.clone()
    }

    /// Waits (up to 10 s) until at least `n` requests were recorded; returns them.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Value> {
        self.shared
            .wait_for_requests(n, |state| state.requests.clone())
            .await
    }

    /// Starts recording, for every later request, how long the fake spent on it:
    /// from the handler's entry (request body received) to the end of the response
    /// body — the "model time" a bench subtracts from a turn.
    pub fn time_handling(&self) {
        self.shared.lock().handling.get_or_insert_with(Vec::new);
    }

    /// Takes the handling times recorded so far (see [`FakeLlm::time_handling`]).
    pub fn take_handling_times(&self) -> Vec<Duration> {
        self.shared
            .lock()
            .handling
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Answers the gateway's live state checks (else [`NO_LIVE_STATE`]).
    #[allow(dead_code)]
    pub fn set_check_responder<F>(&self, responder: F)
    where
        F: Fn(&Value) -> Reply + Send + Sync + 'static,
    {
        self.shared.lock().check_script.set_responder(responder);
    }

    /// The live state checks recorded so far (not in [`FakeLlm::requests`]).
    #[allow(dead_code)]
    pub fn live_checks(&self) -> Vec<Value> {
        self.shared.lock().live_checks.clone()
    }

    /// Scripted replies not yet taken.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.remaining()
    }
}

/// The text of the last `user` message of a request (handy in responders).
pub fn last_user_text(request: &Value) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let last = messages.iter().rev().find(|m| m["role"] == "user")?;
    match &last["content"] {
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

fn invalid_request(message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(error_body(message, "invalid_request_error", None)),
    )
        .into_response()
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let response = answer(&shared, &headers, &body);
    if shared.lock().handling.is_none() {
        return response;
    }
    // Record when the body has been streamed out completely.
    let (parts, body) = response.into_parts();
    let done = futures::stream::once(async move {
        if let Some(times) = shared.lock().handling.as_mut() {
            times.push(started.elapsed());
        }
    })
    .filter_map(|()| async { None::<Result<Bytes, axum::Error>> });
    Response::from_parts(
        parts,
        Body::from_stream(body.into_data_stream().chain(done)),
    )
}

fn answer(shared: &Arc<Shared>, headers: &HeaderMap, body: &Bytes) -> Response {
    let request: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(error) => {
            return invalid_request(&format!(
                "We could not parse the JSON body of your request. ({error})"
            ))
        }
    };
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (api_key, rejected, rejected_fields, window, no_vision) = {
        let mut state = shared.lock();
        if is_live_check(&request) {
            state.live_checks.push(request.clone());
        } else if !state.forget_requests {
            state.requests.push(request.clone());
            state.authorizations.push(authorization.clone());
        }
        (
            state.api_key.clone(),
            state.rejected_params.clone(),
            state.rejected_message_fields.clone(),
            state.context_window,
            state.no_vision,
        )
    };
    shared.request_seen();

    if let Some(key) = api_key {
        let given = authorization
            .as_deref()
            .and_then(|a| a.strip_prefix("Bearer "));
        if given != Some(key.as_str()) {
            let message = match given {
                Some(given) => format!("Incorrect API key provided: {given}."),
                None => "You didn't provide an API key.".to_owned(),
            };
            let body = error_body(&message, "invalid_request_error", Some("invalid_api_key"));
            return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
        }
    }
    if let Err(message) = validate(&request) {
        return invalid_request(&message);
    }
    if no_vision && crate::support::images::any_in(&request) {
        return invalid_request(
            "Invalid content type. image_url is only supported by certain models.",
        );
    }
    if let Some(param) = rejected.iter().find(|p| request.get(p.as_str()).is_some()) {
        return invalid_request(&format!("Unrecognized request argument supplied: {param}"));
    }
    if let Some(message) = unsupported_message_field(&request, &rejected_fields) {
        return invalid_request(&message);
    }
    let tokens = prompt_tokens(&request);
    if let Some(window) = window.filter(|w| tokens > *w) {
        let message = format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.");
        let body = error_body(
            &message,
            "invalid_request_error",
            Some("context_length_exceeded"),
        );
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    }

    if is_live_check(&request) {
        let reply = shared
            .next_reply(|state| &mut state.check_script, &request)
            .unwrap_or_else(|| Reply::text(NO_LIVE_STATE).without_usage());
        return reply.into_response(&request, shared.shutdown.clone());
    }
    match shared.next_reply(|state| &mut state.script, &request) {
        Some(reply) => reply.into_response(&request, shared.shutdown.clone()),
        None => invalid_request("fake LLM: no scripted reply (queue empty and no responder set)"),
    }
}

/// The fake's token count of a request's prompt: its messages and tools as
/// JSON text, four characters a token.
pub fn prompt_tokens(request: &Value) -> u64 {
    let text = request["messages"].to_string().len() + request["tools"].to_string().len();
    text as u64 / 4
}

/// Groq's refusal of the first message carrying one of `fields`.
fn unsupported_message_field(request: &Value, fields: &[String]) -> Option<String> {
    let messages = request["messages"].as_array()?;
    messages.iter().enumerate().find_map(|(i, message)| {
        let field = fields.iter().find(|f| message.get(f.as_str()).is_some())?;
        let role = message["role"].as_str().unwrap_or_default();
        Some(format!(
            "'messages.{i}' : for 'role:{role}' the following must be satisfied[('messages.{i}' : property '{field}' is unsupported)]"
        ))
    })
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [
        {"id": FAKE_MODEL, "object": "model", "created": 0, "owned_by": "switchboard-tests"}
    ]}))
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    let body = error_body(
        &format!("fake LLM: unknown route {method} {uri} (base URL should end in /v1)"),
        "invalid_request_error",
        None,
    );
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}
