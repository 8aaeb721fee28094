//! A fake OpenAI-compatible embeddings server: `POST /v1/embeddings` with
//! `{model, input}`, checked like the real API (JSON body, a known model, a
//! non-empty string or list of non-empty strings, at most `max_inputs` per
//! request and `max_chars` per text, a bearer key when one is set, no unknown
//! fields), answering `{object: "list", data: [{object, index, embedding}],
//! model, usage}`.
//!
//! The vectors are deterministic: a hashed bag of words (lowercased, a few
//! stop words dropped) over [`DIM`] dimensions, with the synonyms of
//! [`SYNONYMS`] folded into one word first. So "automobile" and "car" are
//! the same by construction, which word search cannot know.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::serve::Served;

/// Dimensions of the fake's vectors.
pub const DIM: usize = 256;
/// Words the fake treats as one (the first of each group).
pub const SYNONYMS: &[&[&str]] = &[
    &["car", "automobile", "vehicle", "sedan"],
    &["doctor", "physician", "gp"],
    &["cat", "kitten", "feline"],
    &["coffee", "espresso", "latte"],
    &["allergy", "allergic", "allergies"],
];
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "i", "my", "me", "do", "does", "what", "which", "is", "are", "of", "to",
    "and", "have", "has", "who", "user", "users", "s", "in", "on", "for", "about",
];

#[derive(Default)]
struct Inner {
    model: String,
    api_key: Option<String>,
    max_inputs: usize,
    max_chars: usize,
    down: bool,
    delay: Duration,
    /// Inputs of each request received.
    requests: Vec<Vec<String>>,
    /// Texts refused outright (HTTP 400), as a too-long input is.
    refuse: Vec<String>,
}

pub struct FakeEmbeddings {
    served: Served,
    inner: Arc<Mutex<Inner>>,
}

impl FakeEmbeddings {
    /// Serves `model`, at most 2048 inputs of 8,000 characters each.
    pub async fn start(model: &str) -> FakeEmbeddings {
        let inner = Arc::new(Mutex::new(Inner {
            model: model.to_owned(),
            max_inputs: 2048,
            max_chars: 8000,
            ..Inner::default()
        }));
        let app = Router::new()
            .route("/v1/embeddings", post(embeddings))
            .with_state(Arc::clone(&inner));
        let served = Served::loopback(app, CancellationToken::new(), "fake embeddings").await;
        FakeEmbeddings { served, inner }
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `EMBEDDINGS_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.served.addr)
    }

    pub fn require_key(&self, key: &str) {
        self.lock().api_key = Some(key.to_owned());
    }

    /// Serves another model from now on (requests for the old one are refused).
    pub fn set_model(&self, model: &str) {
        self.lock().model = model.to_owned();
    }

    pub fn set_max_inputs(&self, n: usize) {
        self.lock().max_inputs = n;
    }

    /// Answers 503 to everything while `down`.
    pub fn set_down(&self, down: bool) {
        self.lock().down = down;
    }

    /// Waits this long before answering.
    pub fn set_delay(&self, delay: Duration) {
        self.lock().delay = delay;
    }

    /// Refuses (HTTP 400) any request holding this text.
    pub fn refuse(&self, text: &str) {
        self.lock().refuse.push(text.to_owned());
    }

    /// Inputs of every request served so far.
    pub fn requests(&self) -> Vec<Vec<String>> {
        self.lock().requests.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The fake's vector of `text` (unit length; zero for only stop words).
pub fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    let lower = text.to_lowercase();
    for word in lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if STOP_WORDS.contains(&word) {
            continue;
        }
        let word = SYNONYMS
            .iter()
            .find(|group| group.contains(&word))
            .map_or(word, |group| group[0]);
        // FNV-1a: the dimension and sign of the word.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in word.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[(h % DIM as u64) as usize] += sign;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

fn error(status: StatusCode, message: &str, code: Option<&str>) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}});
    (status, Json(body)).into_response()
}

async fn embeddings(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (delay, down) = {
        let i = inner.lock().unwrap_or_else(PoisonError::into_inner);
        (i.delay, i.down)
    };
    tokio::time::sleep(delay).await;
    if down {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is overloaded.",
            None,
        );
    }
    let mut i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(key) = &i.api_key {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(key.as_str()) {
            return error(
                StatusCode::UNAUTHORIZED,
                "Incorrect API key provided.",
                Some("invalid_api_key"),
            );
        }
    }
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let Some(Value::Object(request)) = json_type
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten()
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "We could not parse the JSON body of your request.",
            None,
        );
    };
    if let Some(field) = request.keys().find(|k| {
        !["model", "input", "encoding_format", "dimensions", "user"].contains(&k.as_str())
    }) {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("Unrecognized request argument supplied: {field}"),
            None,
        );
    }
    match request.get("model").and_then(Value::as_str) {
        Some(m) if m == i.model => {}
        Some(m) => {
            return error(
                StatusCode::NOT_FOUND,
                &format!("The model `{m}` does not exist or you do not have access to it."),
                Some("model_not_found"),
            )
        }
        None => {
            return error(
                StatusCode::BAD_REQUEST,
                "you must provide a model parameter",
                None,
            )
        }
    }
    let inputs: Vec<String> = match request.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => {
            let texts: Option<Vec<String>> = items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect();
            match texts {
                Some(t) => t,
                None => return error(StatusCode::BAD_REQUEST, "'$.input' is invalid.", None),
            }
        }
        _ => return error(StatusCode::BAD_REQUEST, "'$.input' is invalid.", None),
    };
    if inputs.is_empty() || inputs.iter().any(String::is_empty) {
        return error(
            StatusCode::BAD_REQUEST,
            "'$.input' is invalid: empty input.",
            None,
        );
    }
    if inputs.len() > i.max_inputs {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("'$.input' is too long: at most {} inputs.", i.max_inputs),
            None,
        );
    }
    if inputs
        .iter()
        .any(|t| t.chars().count() > i.max_chars || i.refuse.contains(t))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "This model's maximum context length is 8192 tokens.",
            None,
        );
    }
    i.requests.push(inputs.clone());
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, t)| json!({"object": "embedding", "index": index, "embedding": vector(t)}))
        .collect();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    Json(json!({
        "object": "list",
        "data": data,
        "model": i.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    }))
    .into_response()
}
