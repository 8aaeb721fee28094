//! A fake OpenAI-compatible text-to-speech server: `POST /v1/audio/speech`
//! with a JSON body checked like the real API (a `model`, an `input` of 1 to
//! 4,096 characters, a `voice`, a known `response_format`, no unknown
//! fields, a bearer key when one is set), answering a real Ogg Opus file
//! (`fixtures/voice.ogg`, 1.5 s) for `opus` — or, as a test asks, an error
//! status, garbage bytes, or more audio than any voice note.

use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::serve::Served;

/// 1.5 s of Ogg Opus (mono): see `fixtures/make_voice_ogg.py`.
pub const VOICE_OGG: &[u8] = include_bytes!("fixtures/voice.ogg");
/// The real API's limit on `input`.
const MAX_INPUT_CHARS: usize = 4096;
const FORMATS: [&str; 6] = ["mp3", "opus", "aac", "flac", "wav", "pcm"];
const FIELDS: [&str; 6] = [
    "model",
    "input",
    "voice",
    "response_format",
    "speed",
    "instructions",
];

/// What the fake answers a valid request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TtsMode {
    /// The Ogg Opus fixture.
    Speak,
    /// 503, as an overloaded or stopped server.
    Down,
    /// 200 with bytes that are no audio at all.
    Garbage,
    /// 200 with 20 MB: more than any voice note may be.
    Huge,
}

/// One synthesis request as the fake received it.
#[derive(Debug, Clone)]
pub struct TtsRequest {
    pub model: String,
    pub input: String,
    pub voice: String,
    pub format: String,
}

struct Inner {
    mode: TtsMode,
    requests: Vec<TtsRequest>,
    api_key: Option<String>,
}

pub struct FakeTts {
    served: Served,
    inner: Arc<Mutex<Inner>>,
}

impl FakeTts {
    pub async fn start() -> FakeTts {
        let inner = Arc::new(Mutex::new(Inner {
            mode: TtsMode::Speak,
            requests: Vec::new(),
            api_key: None,
        }));
        let app = Router::new()
            .route("/v1/audio/speech", post(speech))
            .with_state(Arc::clone(&inner));
        let served = Served::loopback(app, CancellationToken::new(), "fake TTS").await;
        FakeTts { served, inner }
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `TTS_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.served.addr)
    }

    pub fn set_mode(&self, mode: TtsMode) {
        self.lock().mode = mode;
    }

    /// Requires `Authorization: Bearer key`.
    pub fn require_key(&self, key: &str) {
        self.lock().api_key = Some(key.to_owned());
    }

    /// The valid requests, in order.
    pub fn requests(&self) -> Vec<TtsRequest> {
        self.lock().requests.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}});
    (status, Json(body)).into_response()
}

/// The request's fields, or what the real API says of a bad one (a 400).
fn read(headers: &HeaderMap, body: &[u8]) -> Result<TtsRequest, String> {
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let bad = |m: &str| m.to_owned();
    let parsed: Value = serde_json::from_slice(body)
        .ok()
        .filter(|_| json_type)
        .ok_or_else(|| bad("We could not parse the JSON body of your request."))?;
    let object = parsed
        .as_object()
        .ok_or_else(|| bad("The body must be a JSON object."))?;
    if let Some(unknown) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(&format!(
            "Unrecognized request argument supplied: {unknown}"
        )));
    }
    let text = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| bad(&format!("Missing required parameter: '{name}'.")))
    };
    let request = TtsRequest {
        model: text("model")?,
        input: text("input")?,
        voice: text("voice")?,
        format: object
            .get("response_format")
            .and_then(Value::as_str)
            .unwrap_or("mp3")
            .to_owned(),
    };
    if request.input.chars().count() > MAX_INPUT_CHARS {
        return Err(bad(&format!(
            "'input' is too long: the maximum is {MAX_INPUT_CHARS} characters."
        )));
    }
    if !FORMATS.contains(&request.format.as_str()) {
        return Err(bad(&format!(
            "Invalid value: '{}'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav', and 'pcm'.",
            request.format
        )));
    }
    Ok(request)
}

async fn speech(
    State(inner): State<Arc<Mutex<Inner>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let key = inner
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .api_key
        .clone();
    if let Some(key) = key {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(key.as_str()) {
            return error(StatusCode::UNAUTHORIZED, "Incorrect API key provided.");
        }
    }
    let request = match read(&headers, &body) {
        Ok(r) => r,
        Err(refused) => return error(StatusCode::BAD_REQUEST, &refused),
    };
    if request.format != "opus" {
        return error(
            StatusCode::BAD_REQUEST,
            "fake TTS: only opus is synthesized here",
        );
    }
    let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
    inner.requests.push(request);
    let audio: Vec<u8> = match inner.mode {
        TtsMode::Speak => VOICE_OGG.to_vec(),
        TtsMode::Down => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "The server is overloaded or not ready yet.",
            )
        }
        TtsMode::Garbage => b"<html>definitely not audio</html>".to_vec(),
        TtsMode::Huge => [VOICE_OGG, &vec![0u8; 20 << 20]].concat(),
    };
    ([(header::CONTENT_TYPE, "audio/ogg")], audio).into_response()
}
