//! A fake OpenAI-compatible speech-to-text server: `POST /v1/audio/transcriptions`
//! with a multipart form, checked like the real API (a `file` part with a
//! name, a `model`, a known `response_format`, a bearer key when one is set,
//! 25 MB at most), answering `{"text": …}` from a script.

use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::multipart;
use super::serve::Served;

/// The real API's upload limit.
const MAX_FILE_BYTES: usize = 25 << 20;

/// One transcription request as the fake received it.
#[derive(Debug, Clone)]
pub struct SttRequest {
    pub model: String,
    pub file_name: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

#[derive(Default)]
struct Inner {
    transcripts: Vec<String>,
    requests: Vec<SttRequest>,
    api_key: Option<String>,
}

pub struct FakeStt {
    served: Served,
    inner: Arc<Mutex<Inner>>,
}

impl FakeStt {
    pub async fn start() -> FakeStt {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/v1/audio/transcriptions", post(transcribe))
            .layer(DefaultBodyLimit::max(MAX_FILE_BYTES + (1 << 20)))
            .with_state(Arc::clone(&inner));
        let served = Served::loopback(app, CancellationToken::new(), "fake STT").await;
        FakeStt { served, inner }
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `STT_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.served.addr)
    }

    /// Queues the transcript of the next request.
    pub fn push(&self, transcript: &str) {
        self.lock().transcripts.push(transcript.to_owned());
    }

    /// Requires `Authorization: Bearer key`.
    pub fn require_key(&self, key: &str) {
        self.lock().api_key = Some(key.to_owned());
    }

    pub fn requests(&self) -> Vec<SttRequest> {
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

async fn transcribe(
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
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let parts = match multipart::parse(content_type, &body) {
        Ok(parts) => parts,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("Could not parse multipart form: {e}"),
            )
        }
    };
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    let Some(file) = field("file") else {
        return error(
            StatusCode::BAD_REQUEST,
            "Missing required parameter: 'file'.",
        );
    };
    let Some(file_name) = file.filename.clone().filter(|n| !n.is_empty()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Invalid file format. The file must have a name with an extension.",
        );
    };
    if file.data.len() > MAX_FILE_BYTES {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Maximum content size limit (26214400) exceeded.",
        );
    }
    let Some(model) = field("model")
        .and_then(multipart::Part::text)
        .map(str::to_owned)
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "Missing required parameter: 'model'.",
        );
    };
    if let Some(format) = field("response_format").and_then(multipart::Part::text) {
        if !["json", "text", "srt", "verbose_json", "vtt"].contains(&format) {
            return error(StatusCode::BAD_REQUEST, &format!("Invalid value: '{format}'. Supported values are: 'json', 'text', 'srt', 'verbose_json', and 'vtt'."));
        }
    }
    let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
    inner.requests.push(SttRequest {
        model,
        file_name,
        content_type: file.content_type.clone(),
        bytes: file.data.clone(),
    });
    if inner.transcripts.is_empty() {
        return error(StatusCode::BAD_REQUEST, "fake STT: no scripted transcript");
    }
    let text = inner.transcripts.remove(0);
    Json(json!({ "text": text })).into_response()
}
