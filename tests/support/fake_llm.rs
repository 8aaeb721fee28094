//! A fake OpenAI-compatible chat-completions server on 127.0.0.1 that streams
//! scripted replies over real SSE and is as strict as the real API about requests.
//!
//! ```ignore
//! let llm = FakeLlm::start().await;
//! llm.push(Reply::text("Hello world"));
//! llm.push(Reply::tool_calls([("call_1", "read_file", json!({"path": "a.txt"}))]));
//! let config = OpenAiConfig::new(llm.base_url(), ModelInfo::new("fake-model", None));
//! // … run the code under test …
//! let requests = llm.requests().await; // recorded request bodies, in order
//! ```
//!
//! Every request is checked like the real API would (model, messages, roles,
//! tool-call pairing, `stream: true`, `tool_choice` only with `tools`) and answered
//! with a 400 in OpenAI's error shape when wrong. Replies come from the queue
//! ([`FakeLlm::push`]), else from the responder ([`FakeLlm::set_responder`]), else a
//! 400 "fake LLM: no scripted reply" so a test fails visibly.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The `model` field of chunks built by [`chunk`] (replaced by the requested model).
pub const FAKE_MODEL: &str = "fake-model";

type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// The fake server. Dropping it stops the server and releases stalled streams.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

struct Shared {
    state: Mutex<ServerState>,
    shutdown: CancellationToken,
    request_seen: Notify,
}

#[derive(Default)]
struct ServerState {
    queue: VecDeque<Reply>,
    responder: Option<Responder>,
    rejected_params: Vec<String>,
    api_key: Option<String>,
    requests: Vec<Value>,
    authorizations: Vec<Option<String>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(ServerState::default()),
            shutdown: CancellationToken::new(),
            request_seen: Notify::new(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/models", get(models))
            .fallback(unknown_route)
            .with_state(shared.clone());
        let shutdown = shared.shutdown.clone();
        let server = tokio::spawn(async move {
            let serve =
                axum::serve(listener, app).with_graceful_shutdown(shutdown.cancelled_owned());
            if let Err(error) = serve.await {
                tracing::warn!(%error, "fake LLM server stopped");
            }
        });
        Ok(Self {
            addr,
            shared,
            server,
        })
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `OpenAiConfig::base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply; each valid request takes the oldest one.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().queue.push_back(reply);
    }

    /// Answers requests when the queue is empty (benches, demos, echo bots).
    pub fn set_responder<F>(&self, responder: F)
    where
        F: Fn(&Value) -> Reply + Send + Sync + 'static,
    {
        self.shared.lock().responder = Some(Arc::new(responder));
    }

    /// Answers 400 "Unrecognized request argument supplied: NAME" to any request
    /// carrying one of these top-level parameters (like older vLLM / llama.cpp).
    pub fn reject_params(&self, params: &[&str]) {
        let mut state = self.shared.lock();
        state
            .rejected_params
            .extend(params.iter().map(|p| (*p).to_owned()));
    }

    /// Answers 401 unless the request carries `Authorization: Bearer KEY`.
    pub fn require_api_key(&self, key: &str) {
        self.shared.lock().api_key = Some(key.to_owned());
    }

    /// Every request body that parsed as JSON, in arrival order (rejected ones too).
    pub async fn requests(&self) -> Vec<Value> {
        self.shared.lock().requests.clone()
    }

    /// The `Authorization` header of each recorded request, in the same order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared.lock().authorizations.clone()
    }

    /// Waits (up to 10 s) until at least `n` requests were recorded; returns them.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let notified = self.shared.request_seen.notified();
            let requests = self.requests().await;
            if requests.len() >= n || tokio::time::Instant::now() >= deadline {
                return requests;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    /// Scripted replies not yet taken.
    pub fn remaining(&self) -> usize {
        self.shared.lock().queue.len()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        self.server.abort();
    }
}

/// One scripted answer: a stream of chunks, an error status or a raw body.
#[derive(Debug, Clone)]
pub struct Reply {
    body: ReplyBody,
    chunk_delay: Option<Duration>,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum ReplyBody {
    Stream {
        chunks: Vec<Value>,
        finish: Option<Value>,
        usage: UsageSpec,
        done: bool,
        end: StreamEnd,
    },
    Status {
        status: u16,
        body: Value,
    },
    Raw {
        content_type: String,
        body: String,
    },
}

#[derive(Debug, Clone, Copy)]
enum UsageSpec {
    /// Prompt tokens estimated from the request, one completion token per chunk.
    Auto,
    Fixed {
        prompt: u64,
        completion: u64,
        cached: u64,
    },
    Omit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamEnd {
    Close,
    /// Keep the connection open without sending anything (until the fake drops).
    Stall,
    /// Abort the connection mid-body.
    Disconnect,
}

impl Reply {
    /// Text streamed as one content delta per word, then `finish_reason: stop`,
    /// usage (when the request asked for it) and `[DONE]`.
    pub fn text(text: &str) -> Self {
        Self::stream(content_deltas("content", text), "stop")
    }

    /// `reasoning_content` deltas, then the text.
    pub fn reasoning(thinking: &str, text: &str) -> Self {
        let mut chunks = content_deltas("reasoning_content", thinking);
        chunks.extend(content_deltas("content", text));
        for later in chunks.iter_mut().skip(1) {
            if let Some(delta) = later["choices"][0]["delta"].as_object_mut() {
                delta.remove("role");
            }
        }
        Self::stream(chunks, "stop")
    }

    /// Tool calls, each as a first fragment (index, id, name, empty arguments) and
    /// its arguments JSON split mid-token over three fragments; `finish_reason:
    /// tool_calls`.
    pub fn tool_calls<I, A, B>(calls: I) -> Self
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        Self::text_then_tool_calls("", calls)
    }

    /// Some text (e.g. "Let me check.") followed by tool calls.
    pub fn text_then_tool_calls<I, A, B>(text: &str, calls: I) -> Self
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        let mut chunks = if text.is_empty() {
            vec![chunk(json!({"role": "assistant", "content": null}), None)]
        } else {
            content_deltas("content", text)
        };
        for (index, (id, name, args)) in calls.into_iter().enumerate() {
            let (id, name) = (id.into(), name.into());
            chunks.push(chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
            for piece in split_in_three(&args.to_string()) {
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                ));
            }
        }
        Self::stream(chunks, "tool_calls")
    }

    /// Exactly these chunk objects, then `[DONE]`; no finish chunk, no usage.
    pub fn chunks(chunks: Vec<Value>) -> Self {
        let mut reply = Self::stream(chunks, "stop");
        if let ReplyBody::Stream { finish, usage, .. } = &mut reply.body {
            *finish = None;
            *usage = UsageSpec::Omit;
        }
        reply
    }

    /// An error status with a JSON body, e.g. `Reply::status(429, json!({"error": …}))`.
    pub fn status(status: u16, body: Value) -> Self {
        Self::from_body(ReplyBody::Status { status, body })
    }

    /// A 200 with this body verbatim (content type `text/event-stream`).
    pub fn raw_body(body: &str) -> Self {
        Self::from_body(ReplyBody::Raw {
            content_type: "text/event-stream".to_owned(),
            body: body.to_owned(),
        })
    }

    /// Sends the chunks, then keeps the connection open and silent.
    pub fn then_stall(self) -> Self {
        self.with_end(StreamEnd::Stall)
    }

    /// Sends the chunks, then drops the connection (a reset mid-stream).
    pub fn then_disconnect(self) -> Self {
        self.with_end(StreamEnd::Disconnect)
    }

    /// Usage reported instead of the estimate.
    pub fn with_usage(mut self, prompt: u64, completion: u64, cached: u64) -> Self {
        if let ReplyBody::Stream { usage, .. } = &mut self.body {
            *usage = UsageSpec::Fixed {
                prompt,
                completion,
                cached,
            };
        }
        self
    }

    pub fn without_usage(mut self) -> Self {
        if let ReplyBody::Stream { usage, .. } = &mut self.body {
            *usage = UsageSpec::Omit;
        }
        self
    }

    /// Ends the stream without `data: [DONE]` (the connection just closes).
    pub fn without_done(mut self) -> Self {
        if let ReplyBody::Stream { done, .. } = &mut self.body {
            *done = false;
        }
        self
    }

    /// Waits this long before each SSE frame (streaming demos, edit throttling).
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds `Retry-After: SECS`.
    pub fn retry_after(self, secs: u64) -> Self {
        self.header("retry-after", &secs.to_string())
    }

    fn stream(chunks: Vec<Value>, finish_reason: &str) -> Self {
        Self::from_body(ReplyBody::Stream {
            chunks,
            finish: Some(chunk(json!({}), Some(finish_reason))),
            usage: UsageSpec::Auto,
            done: true,
            end: StreamEnd::Close,
        })
    }

    fn from_body(body: ReplyBody) -> Self {
        Self {
            body,
            chunk_delay: None,
            headers: Vec::new(),
        }
    }

    fn with_end(mut self, new_end: StreamEnd) -> Self {
        if let ReplyBody::Stream {
            finish,
            usage,
            done,
            end,
            ..
        } = &mut self.body
        {
            *finish = None;
            *usage = UsageSpec::Omit;
            *done = false;
            *end = new_end;
        }
        self
    }

    fn into_response(self, request: &Value, shutdown: CancellationToken) -> Response {
        let mut response = match self.body {
            ReplyBody::Status { status, body } => {
                let code =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                (code, Json(body)).into_response()
            }
            ReplyBody::Raw { content_type, body } => {
                ([(header::CONTENT_TYPE, content_type)], body).into_response()
            }
            ReplyBody::Stream {
                chunks,
                finish,
                usage,
                done,
                end,
            } => {
                let model = request["model"].as_str().unwrap_or(FAKE_MODEL);
                let completion = chunks.len() as u64;
                let mut frames: Vec<Value> = chunks.into_iter().chain(finish).collect();
                for frame in &mut frames {
                    if frame["object"] == "chat.completion.chunk" {
                        frame["model"] = Value::from(model);
                    }
                }
                let wants_usage = request["stream_options"]["include_usage"] == true;
                let usage = match usage {
                    UsageSpec::Omit => None,
                    _ if !wants_usage => None,
                    UsageSpec::Fixed {
                        prompt,
                        completion,
                        cached,
                    } => Some(usage_chunk(prompt, completion, cached)),
                    UsageSpec::Auto => {
                        let prompt = request["messages"].to_string().len() as u64 / 4;
                        Some(usage_chunk(prompt, completion, 0))
                    }
                };
                let mut text: Vec<String> = frames
                    .iter()
                    .chain(usage.as_ref())
                    .map(|frame| format!("data: {frame}\n\n"))
                    .collect();
                if done {
                    text.push("data: [DONE]\n\n".to_owned());
                }
                let body = sse_body(text, self.chunk_delay, end, shutdown);
                let mut response = Response::new(body);
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("text/event-stream"),
                );
                response
            }
        };
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) = (
                header::HeaderName::from_bytes(name.as_bytes()),
                header::HeaderValue::from_str(&value),
            ) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

/// A chunk object shaped like OpenAI's (`chat.completion.chunk`, one choice).
pub fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": FAKE_MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

/// The final usage chunk (empty `choices`), as sent with `include_usage`.
pub fn usage_chunk(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": FAKE_MODEL,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    })
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

/// An OpenAI-shaped error body.
pub fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

fn content_deltas(field: &str, text: &str) -> Vec<Value> {
    let mut pieces: Vec<&str> = text.split_inclusive(' ').collect();
    if pieces.is_empty() {
        pieces.push("");
    }
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut delta = json!({ field: piece });
            if i == 0 {
                delta["role"] = Value::from("assistant");
            }
            chunk(delta, None)
        })
        .collect()
}

/// Splits at char boundaries near a third and two thirds (mid-JSON on purpose).
fn split_in_three(text: &str) -> Vec<String> {
    let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let at = |frac: usize| {
        cuts.get(cuts.len() * frac / 3)
            .copied()
            .unwrap_or(text.len())
    };
    let (a, b) = (at(1), at(2));
    vec![
        text[..a].to_owned(),
        text[a..b].to_owned(),
        text[b..].to_owned(),
    ]
}

fn sse_body(
    frames: Vec<String>,
    delay: Option<Duration>,
    end: StreamEnd,
    shutdown: CancellationToken,
) -> Body {
    let frames = stream::iter(frames).then(move |frame| async move {
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        Ok::<Bytes, std::io::Error>(Bytes::from(frame))
    });
    let tail: BoxStream<'static, Result<Bytes, std::io::Error>> = match end {
        StreamEnd::Close => stream::empty().boxed(),
        StreamEnd::Stall => stream::once(async move {
            shutdown.cancelled().await;
            Ok(Bytes::new())
        })
        .boxed(),
        StreamEnd::Disconnect => stream::once(async {
            // Give hyper time to flush the frames before the connection is cut.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "fake LLM: scripted disconnect",
            ))
        })
        .boxed(),
    };
    Body::from_stream(frames.chain(tail))
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
    let request: Value = match serde_json::from_slice(&body) {
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
    let (api_key, rejected) = {
        let mut state = shared.lock();
        state.requests.push(request.clone());
        state.authorizations.push(authorization.clone());
        (state.api_key.clone(), state.rejected_params.clone())
    };
    shared.request_seen.notify_waiters();

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
    if let Some(param) = rejected.iter().find(|p| request.get(p.as_str()).is_some()) {
        return invalid_request(&format!("Unrecognized request argument supplied: {param}"));
    }

    let (queued, responder) = {
        let mut state = shared.lock();
        (state.queue.pop_front(), state.responder.clone())
    };
    let reply = queued.or_else(|| responder.map(|respond| respond(&request)));
    match reply {
        Some(reply) => reply.into_response(&request, shared.shutdown.clone()),
        None => invalid_request("fake LLM: no scripted reply (queue empty and no responder set)"),
    }
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

/// The checks the real API makes that our client could get wrong.
fn validate(request: &Value) -> Result<(), String> {
    let Some(body) = request.as_object() else {
        return Err("The request body must be a JSON object.".to_owned());
    };
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("You must provide a model parameter.".to_owned());
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("Missing required parameter: 'messages'.".to_owned());
    };
    if messages.is_empty() {
        return Err("Invalid 'messages': empty array. Expected at least one message.".to_owned());
    }
    if body.get("stream") != Some(&Value::Bool(true)) {
        return Err("fake LLM: only streaming is supported; 'stream' must be true.".to_owned());
    }
    validate_tools(body.get("tools"), body.get("tool_choice"))?;
    validate_messages(messages)
}

fn validate_tools(tools: Option<&Value>, tool_choice: Option<&Value>) -> Result<(), String> {
    let Some(tools) = tools else {
        if tool_choice.is_some() {
            return Err("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.".to_owned());
        }
        return Ok(());
    };
    let Some(tools) = tools.as_array().filter(|t| !t.is_empty()) else {
        return Err("Invalid 'tools': expected a non-empty array.".to_owned());
    };
    for (i, tool) in tools.iter().enumerate() {
        let name = tool["function"]["name"].as_str().unwrap_or_default();
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if tool["type"] != "function" || !valid_name {
            return Err(format!("Invalid 'tools[{i}]': expected {{type: 'function', function: {{name: ^[a-zA-Z0-9_-]{{1,64}}$, …}}}}."));
        }
    }
    Ok(())
}

fn validate_messages(messages: &[Value]) -> Result<(), String> {
    let unanswered = |pending: &[String]| {
        format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", pending.join(", "))
    };
    let mut pending: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role != "tool" && !pending.is_empty() {
            return Err(unanswered(&pending));
        }
        let content = &message["content"];
        let has_text = content.is_string() || content.is_array();
        match role {
            "system" | "developer" | "user" if !has_text => {
                return Err(format!(
                    "Invalid 'messages[{i}].content': expected a string or an array."
                ));
            }
            "system" | "developer" | "user" => {}
            "assistant" => {
                let calls = message["tool_calls"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if !has_text && calls.is_empty() {
                    return Err(format!("Invalid 'messages[{i}]': an assistant message needs 'content' or 'tool_calls'."));
                }
                for call in calls {
                    let id = call["id"].as_str().unwrap_or_default();
                    if id.is_empty()
                        || call["type"] != "function"
                        || !call["function"]["name"].is_string()
                        || !call["function"]["arguments"].is_string()
                    {
                        return Err(format!("Invalid 'messages[{i}].tool_calls': each needs id, type 'function', function.name and function.arguments (a string)."));
                    }
                    pending.push(id.to_owned());
                }
            }
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                let Some(position) = pending.iter().position(|p| p == id) else {
                    return Err(format!("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}], tool_call_id {id:?})."));
                };
                pending.remove(position);
                if !content.is_string() && !content.is_array() {
                    return Err(format!(
                        "Invalid 'messages[{i}].content': expected a string."
                    ));
                }
            }
            other => {
                return Err(format!("Invalid value: '{other}' (messages[{i}].role). Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'."));
            }
        }
    }
    if pending.is_empty() {
        Ok(())
    } else {
        Err(unanswered(&pending))
    }
}
