//! A fake Gemini API (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`)
//! on 127.0.0.1 that streams scripted replies over real SSE and is as strict as
//! the real API about requests.
//!
//! ```ignore
//! let gemini = FakeGemini::start().await;
//! gemini.push(Reply::text("Hello world"));
//! gemini.push(Reply::calls([("read_file", json!({"path": "a.txt"}))]));
//! let config = EndpointConfig::new(gemini.base_url(), ModelInfo::new("gemini-2.5-flash", None));
//! ```
//!
//! Every request is checked like the real API does (see `validate`) and answered
//! with a 400 INVALID_ARGUMENT in Google's error shape when wrong. Replies come
//! from the queue, else from the responder, else a 400 "fake Gemini: no scripted
//! reply" so a test fails visibly.

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::serve::model::{self, Script};
use super::serve::Served;

mod reply;
mod validate;

#[allow(unused_imports)]
pub use reply::{error_body, Reply};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The model named in the path.
    pub model: String,
    /// The `x-goog-api-key` header.
    pub header_key: Option<String>,
    /// Whether a `key=` query parameter was present (our provider must not use it).
    pub key_in_url: bool,
    pub body: Value,
}

/// The fake server. Dropping it stops the server and releases stalled streams.
pub struct FakeGemini {
    served: Served,
    shared: Arc<Shared>,
}

type Shared = model::Shared<ServerState>;

#[derive(Default)]
struct ServerState {
    script: Script<Reply>,
    api_key: Option<String>,
    /// Rejected `generationConfig` fields and the message to answer with.
    rejected: Vec<(String, String)>,
    /// `Some` once thought signatures are on: the signatures issued so far.
    signatures: Option<HashSet<String>>,
    received: Vec<Received>,
}

impl FakeGemini {
    /// Starts the server on 127.0.0.1 with an ephemeral port.
    pub async fn start() -> Self {
        let shared = Shared::new();
        let app = Router::new().fallback(handle);
        let served = shared.serve_loopback(app, "fake Gemini").await;
        Self { served, shared }
    }

    /// `http://127.0.0.1:PORT/v1beta`, the value for `EndpointConfig::base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1beta", self.served.addr)
    }

    /// Queues a reply; each valid request takes the oldest one.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().script.push(reply);
    }

    /// Answers requests when the queue is empty.
    pub fn set_responder<F>(&self, responder: F)
    where
        F: Fn(&Value) -> Reply + Send + Sync + 'static,
    {
        self.shared.lock().script.set_responder(responder);
    }

    /// Requires this key (`x-goog-api-key` header or `?key=`): none is a 403
    /// PERMISSION_DENIED, a wrong one a 400 API_KEY_INVALID, like the real API.
    pub fn require_api_key(&self, key: &str) {
        self.shared.lock().api_key = Some(key.to_owned());
    }

    /// Answers 400 `message` to requests whose `generationConfig` has `field`.
    pub fn reject_generation_field(&self, field: &str, message: &str) {
        self.shared
            .lock()
            .rejected
            .push((field.to_owned(), message.to_owned()));
    }

    /// Acts like a Gemini 3 thinking model: the first `functionCall` part of each
    /// reply carries a `thoughtSignature`, and a request whose history has a
    /// function-call turn without a signature issued here is a 400.
    pub fn require_thought_signatures(&self) {
        self.shared
            .lock()
            .signatures
            .get_or_insert_with(HashSet::new);
    }

    /// Every request that reached the route, in arrival order (rejected ones too).
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().received.clone()
    }

    /// The bodies of [`FakeGemini::received`].
    pub fn requests(&self) -> Vec<Value> {
        self.received().into_iter().map(|r| r.body).collect()
    }

    /// Waits (up to 10 s) until at least `n` requests were recorded; returns them.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Value> {
        let bodies = |state: &ServerState| state.received.iter().map(|r| r.body.clone()).collect();
        self.shared.wait_for_requests(n, bodies).await
    }

    /// Scripted replies not yet taken.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.remaining()
    }
}

fn google_error(code: StatusCode, status: &str, message: &str) -> Response {
    (code, Json(error_body(code.as_u16(), status, message))).into_response()
}

fn invalid(message: &str) -> Response {
    google_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", message)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path();
    let model = path
        .strip_prefix("/v1beta/models/")
        .and_then(|rest| rest.strip_suffix(":streamGenerateContent"));
    let Some(model) = model.filter(|_| method == Method::POST) else {
        let message =
            format!("fake Gemini: unknown route {method} {path} (base URL should end in /v1beta)");
        return google_error(StatusCode::NOT_FOUND, "NOT_FOUND", &message);
    };
    let query: Vec<(String, String)> = uri
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let url_key = query
        .iter()
        .find(|(k, _)| k == "key")
        .map(|(_, v)| v.clone());
    let header_key = headers
        .get("x-goog-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let request: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(error) => return invalid(&format!("Invalid JSON payload received. {error}")),
    };
    let (expected_key, rejected) = {
        let mut state = shared.lock();
        state.received.push(Received {
            model: model.to_owned(),
            header_key: header_key.clone(),
            key_in_url: url_key.is_some(),
            body: request.clone(),
        });
        (state.api_key.clone(), state.rejected.clone())
    };
    shared.request_seen();

    if let Some(expected) = expected_key {
        match header_key.or(url_key) {
            None => return google_error(StatusCode::FORBIDDEN, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."),
            Some(given) if given != expected => return invalid("API key not valid. Please pass a valid API key."),
            Some(_) => {}
        }
    }
    if model.is_empty() || model.contains('/') {
        return google_error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            &format!("models/{model} is not found for API version v1beta"),
        );
    }
    if !query.iter().any(|(k, v)| k == "alt" && v == "sse") {
        return invalid("fake Gemini: only alt=sse streaming is supported (without it the real API answers one JSON array)");
    }
    if let Err(message) = validate::validate(&request) {
        return invalid(&message);
    }
    if let Some((_, message)) = rejected
        .iter()
        .find(|(field, _)| request["generationConfig"].get(field).is_some())
    {
        return invalid(&message.replace("{model}", model));
    }
    if let Err(message) = check_signatures(&shared, &request) {
        return invalid(&message);
    }
    let Some(mut reply) = shared.next_reply(|state| &mut state.script, &request) else {
        return invalid("fake Gemini: no scripted reply (queue empty and no responder set)");
    };
    sign(&shared, &mut reply);
    reply.into_response(&request, shared.shutdown.clone())
}

/// With signatures on, the first `functionCall` part of every model turn must
/// carry a signature this server issued (Gemini 3's rule), or the documented
/// placeholder for calls another model made.
fn check_signatures(shared: &Shared, request: &Value) -> Result<(), String> {
    let state = shared.lock();
    let Some(issued) = &state.signatures else {
        return Ok(());
    };
    for (i, content) in request["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let parts = content["parts"].as_array().into_iter().flatten();
        let Some((j, first)) = parts
            .enumerate()
            .find(|(_, p)| p.get("functionCall").is_some())
        else {
            continue;
        };
        let valid = first["thoughtSignature"]
            .as_str()
            .is_some_and(|s| issued.contains(s) || s == "skip_thought_signature_validator");
        if !valid {
            return Err(format!("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:{}` , position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details. (contents[{i}].parts[{j}])", first["functionCall"]["name"].as_str().unwrap_or_default(), j + 1));
        }
    }
    Ok(())
}

/// Adds a fresh signature to the reply's first function call (signatures on).
fn sign(shared: &Shared, reply: &mut Reply) {
    let mut state = shared.lock();
    let Some(issued) = state.signatures.as_mut() else {
        return;
    };
    if let Some(first) = reply.function_calls_mut().into_iter().next() {
        let signature = format!("c2ln{}+/==", uuid::Uuid::new_v4().simple());
        first["thoughtSignature"] = json!(signature);
        issued.insert(signature);
    }
}
