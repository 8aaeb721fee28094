//! Scripted replies of the fake LLM: SSE chunk streams, error statuses, raw bodies.

use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::support::serve::model::{split_in_three, sse_response, with_headers, StreamEnd};

/// The `model` field of chunks built by [`chunk`] (replaced by the requested model).
pub const FAKE_MODEL: &str = "fake-model";

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
        let chunks = if text.is_empty() {
            vec![chunk(json!({"role": "assistant", "content": null}), None)]
        } else {
            content_deltas("content", text)
        };
        Self::after_chunks_tool_calls(chunks, calls)
    }

    /// `reasoning_content` deltas (a thinking model), then tool calls.
    pub fn reasoning_then_tool_calls<I, A, B>(thinking: &str, calls: I) -> Self
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        Self::after_chunks_tool_calls(content_deltas("reasoning_content", thinking), calls)
    }

    fn after_chunks_tool_calls<I, A, B>(mut chunks: Vec<Value>, calls: I) -> Self
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
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

    pub(super) fn into_response(self, request: &Value, shutdown: CancellationToken) -> Response {
        let response = match self.body {
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
                sse_response(text, self.chunk_delay, end, shutdown)
            }
        };
        with_headers(response, self.headers)
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
