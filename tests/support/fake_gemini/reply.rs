//! Scripted replies of the fake Gemini server: SSE streams of
//! `GenerateContentResponse`s, Google-shaped error statuses, stalls.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::support::serve::model::{sse_response, with_headers, StreamEnd};

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    body: ReplyBody,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum ReplyBody {
    Stream {
        /// `parts` arrays, one SSE event each.
        events: Vec<Value>,
        finish: Option<String>,
        usage: Option<Value>,
        stall: bool,
        /// Events sent verbatim (no candidate wrapping, finish or usage).
        raw: bool,
    },
    Status {
        status: u16,
        body: Value,
    },
}

impl Reply {
    /// Text split over several events (one per word), `finishReason: STOP` and
    /// usage on the last one.
    pub fn text(text: &str) -> Self {
        Self::parts(
            words(text)
                .into_iter()
                .map(|w| json!([{ "text": w }]))
                .collect(),
        )
    }

    /// A thought summary (`thought: true` parts), then the text.
    pub fn thought_then_text(thought: &str, text: &str) -> Self {
        let mut events: Vec<Value> = words(thought)
            .into_iter()
            .map(|w| json!([{ "text": w, "thought": true }]))
            .collect();
        events.extend(words(text).into_iter().map(|w| json!([{ "text": w }])));
        Self::parts(events)
    }

    /// Function calls `(name, args)`, whole, in one event.
    pub fn calls<I, N>(calls: I) -> Self
    where
        I: IntoIterator<Item = (N, Value)>,
        N: Into<String>,
    {
        Self::text_then_calls("", calls)
    }

    /// Some text, then function calls in one event.
    pub fn text_then_calls<I, N>(text: &str, calls: I) -> Self
    where
        I: IntoIterator<Item = (N, Value)>,
        N: Into<String>,
    {
        let mut events: Vec<Value> = words(text)
            .into_iter()
            .map(|w| json!([{ "text": w }]))
            .collect();
        let parts: Vec<Value> = calls
            .into_iter()
            .map(|(name, args)| json!({"functionCall": {"name": name.into(), "args": args}}))
            .collect();
        events.push(Value::Array(parts));
        Self::parts(events)
    }

    /// Events given as `parts` arrays; `STOP` and usage are added to the last.
    pub fn parts(events: Vec<Value>) -> Self {
        Self::from_body(ReplyBody::Stream {
            events,
            finish: Some("STOP".to_owned()),
            usage: None,
            stall: false,
            raw: false,
        })
    }

    /// Whole `GenerateContentResponse` objects, sent as they are.
    pub fn raw_events(events: Vec<Value>) -> Self {
        Self::from_body(ReplyBody::Stream {
            events,
            finish: None,
            usage: None,
            stall: false,
            raw: true,
        })
    }

    /// A Google error: `{"error": {code, message, status}}` with this HTTP status.
    pub fn error(code: u16, status: &str, message: &str) -> Self {
        Self::from_body(ReplyBody::Status {
            status: code,
            body: error_body(code, status, message),
        })
    }

    /// Adds a `google.rpc.RetryInfo` detail (`retryDelay`, e.g. `"7s"`) to an error.
    pub fn with_retry_delay(mut self, delay: &str) -> Self {
        if let ReplyBody::Status { body, .. } = &mut self.body {
            body["error"]["details"] = json!([{
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": delay,
            }]);
        }
        self
    }

    /// The finish reason of the last event (default `STOP`).
    pub fn finish(mut self, reason: &str) -> Self {
        if let ReplyBody::Stream { finish, .. } = &mut self.body {
            *finish = Some(reason.to_owned());
        }
        self
    }

    /// Ends the body without any `finishReason` (a cut-off stream).
    pub fn without_finish(mut self) -> Self {
        if let ReplyBody::Stream { finish, .. } = &mut self.body {
            *finish = None;
        }
        self
    }

    /// Sends the events without a finish, then keeps the connection silent.
    pub fn then_stall(mut self) -> Self {
        if let ReplyBody::Stream { finish, stall, .. } = &mut self.body {
            *finish = None;
            *stall = true;
        }
        self
    }

    /// Usage reported on the last event instead of the estimate.
    pub fn with_usage(mut self, prompt: u64, candidates: u64, cached: u64, thoughts: u64) -> Self {
        if let ReplyBody::Stream { usage, .. } = &mut self.body {
            *usage = Some(json!({
                "promptTokenCount": prompt,
                "candidatesTokenCount": candidates,
                "cachedContentTokenCount": cached,
                "thoughtsTokenCount": thoughts,
                "totalTokenCount": prompt + candidates + thoughts,
            }));
        }
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn from_body(body: ReplyBody) -> Self {
        Self {
            body,
            headers: Vec::new(),
        }
    }

    /// The `functionCall` parts of the reply, mutably (the server signs them).
    pub(super) fn function_calls_mut(&mut self) -> Vec<&mut Value> {
        let ReplyBody::Stream {
            events, raw: false, ..
        } = &mut self.body
        else {
            return Vec::new();
        };
        events
            .iter_mut()
            .filter_map(Value::as_array_mut)
            .flatten()
            .filter(|part| part.get("functionCall").is_some())
            .collect()
    }

    pub(super) fn into_response(self, request: &Value, shutdown: CancellationToken) -> Response {
        let response = match self.body {
            ReplyBody::Status { status, body } => {
                let code =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                (code, Json(body)).into_response()
            }
            ReplyBody::Stream {
                events,
                finish,
                usage,
                stall,
                raw,
            } => {
                let frames = if raw {
                    events
                } else {
                    let prompt = request["contents"].to_string().len() as u64 / 4;
                    let usage = usage.unwrap_or_else(|| {
                        json!({"promptTokenCount": prompt, "candidatesTokenCount": events.len(),
                               "totalTokenCount": prompt + events.len() as u64})
                    });
                    candidates(events, finish, usage)
                };
                let text = frames
                    .iter()
                    .map(|f| format!("data: {f}\r\n\r\n"))
                    .collect();
                let end = if stall {
                    StreamEnd::Stall
                } else {
                    StreamEnd::Close
                };
                sse_response(text, None, end, shutdown)
            }
        };
        with_headers(response, self.headers)
    }
}

/// Wraps `parts` arrays as responses; the last one gets the finish and usage.
fn candidates(mut events: Vec<Value>, finish: Option<String>, usage: Value) -> Vec<Value> {
    if events.is_empty() && finish.is_some() {
        // A finish without content (SAFETY and friends) still gets its event.
        events.push(Value::Null);
    }
    let last = events.len().saturating_sub(1);
    events
        .into_iter()
        .enumerate()
        .map(|(i, parts)| {
            let mut candidate = if parts.is_null() {
                json!({"index": 0})
            } else {
                json!({"content": {"role": "model", "parts": parts}, "index": 0})
            };
            let mut response = json!({"modelVersion": "fake-gemini", "responseId": "fake"});
            if i == last {
                if let Some(reason) = &finish {
                    candidate["finishReason"] = Value::from(reason.as_str());
                    response["usageMetadata"] = usage.clone();
                }
            }
            response["candidates"] = json!([candidate]);
            response
        })
        .collect()
}

/// A Google API error body.
pub fn error_body(code: u16, status: &str, message: &str) -> Value {
    json!({"error": {"code": code, "message": message, "status": status}})
}

fn words(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_owned).collect()
}
