//! Scripted replies of the fake Anthropic API: the exact SSE event sequence of a
//! streamed message, error statuses, in-stream errors, stalls and truncation.

use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::support::serve::model::{split_in_three, sse_response, with_headers, StreamEnd};

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    body: ReplyBody,
    chunk_delay: Option<Duration>,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum ReplyBody {
    Stream(StreamSpec),
    Status { status: u16, body: Value },
}

#[derive(Debug, Clone)]
struct StreamSpec {
    blocks: Vec<Block>,
    stop_reason: &'static str,
    /// `(input, output, cache_read, cache_write)`; `None` estimates.
    usage: Option<(u64, u64, u64, u64)>,
    end: End,
}

#[derive(Debug, Clone)]
enum Block {
    Text(String),
    Thinking(String),
    RedactedThinking(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

#[derive(Debug, Clone)]
enum End {
    /// `message_delta` and `message_stop`, then close.
    Complete,
    /// Close without `message_delta`/`message_stop`.
    Truncate,
    /// Keep the connection open and silent (until the fake drops).
    Stall,
    /// An `error` event, then close.
    Error { kind: String, message: String },
}

impl Reply {
    /// A text block streamed one `text_delta` per word; `stop_reason: end_turn`.
    pub fn text(text: &str) -> Self {
        Self::stream(vec![Block::Text(text.to_owned())], "end_turn")
    }

    /// A thinking block (with a signature), then the text.
    pub fn thinking(thinking: &str, text: &str) -> Self {
        let blocks = vec![
            Block::Thinking(thinking.to_owned()),
            Block::Text(text.to_owned()),
        ];
        Self::stream(blocks, "end_turn")
    }

    /// A thinking block, then `tool_use` blocks (the shape the API requires
    /// back in the next request while thinking is on).
    pub fn thinking_then_tool_uses<I, A, B>(thinking: &str, calls: I) -> Self
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        let mut reply = Self::tool_uses(calls);
        if let ReplyBody::Stream(spec) = &mut reply.body {
            spec.blocks.insert(0, Block::Thinking(thinking.to_owned()));
        }
        reply
    }

    /// A redacted thinking block (encrypted by the API), then the text.
    pub fn redacted_thinking(text: &str) -> Self {
        let blocks = vec![
            Block::RedactedThinking("flagged reasoning".to_owned()),
            Block::Text(text.to_owned()),
        ];
        Self::stream(blocks, "end_turn")
    }

    /// `tool_use` blocks whose input JSON arrives in fragments split mid-token;
    /// `stop_reason: tool_use`.
    pub fn tool_uses<I, A, B>(calls: I) -> Self
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        Self::text_then_tool_uses("", calls)
    }

    /// A text block (unless empty) followed by `tool_use` blocks.
    pub fn text_then_tool_uses<I, A, B>(text: &str, calls: I) -> Self
    where
        I: IntoIterator<Item = (A, B, Value)>,
        A: Into<String>,
        B: Into<String>,
    {
        let mut blocks: Vec<Block> = Some(text)
            .filter(|t| !t.is_empty())
            .map(|t| Block::Text(t.to_owned()))
            .into_iter()
            .collect();
        blocks.extend(calls.into_iter().map(|(id, name, input)| Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }));
        Self::stream(blocks, "tool_use")
    }

    /// An error status with Anthropic's body, e.g. `Reply::status(529,
    /// "overloaded_error", "Overloaded")`.
    pub fn status(status: u16, kind: &str, message: &str) -> Self {
        Self::from_body(ReplyBody::Status {
            status,
            body: error_body(kind, message),
        })
    }

    /// Usage reported in `message_start` / `message_delta` instead of estimates.
    pub fn with_usage(
        mut self,
        input: u64,
        output: u64,
        cache_read: u64,
        cache_write: u64,
    ) -> Self {
        if let ReplyBody::Stream(spec) = &mut self.body {
            spec.usage = Some((input, output, cache_read, cache_write));
        }
        self
    }

    /// Sends the content blocks, then stays silent with the connection open.
    pub fn then_stall(self) -> Self {
        self.with_end(End::Stall)
    }

    /// Sends the content blocks, then closes without `message_stop`.
    pub fn truncated(self) -> Self {
        self.with_end(End::Truncate)
    }

    /// Sends the content blocks, then an `error` event (e.g. `overloaded_error`).
    pub fn then_error(self, kind: &str, message: &str) -> Self {
        self.with_end(End::Error {
            kind: kind.to_owned(),
            message: message.to_owned(),
        })
    }

    /// Waits this long before each SSE event.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = Some(delay);
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds `retry-after: SECS`.
    pub fn retry_after(self, secs: u64) -> Self {
        self.header("retry-after", &secs.to_string())
    }

    fn stream(blocks: Vec<Block>, stop_reason: &'static str) -> Self {
        Self::from_body(ReplyBody::Stream(StreamSpec {
            blocks,
            stop_reason,
            usage: None,
            end: End::Complete,
        }))
    }

    fn from_body(body: ReplyBody) -> Self {
        Self {
            body,
            chunk_delay: None,
            headers: Vec::new(),
        }
    }

    fn with_end(mut self, end: End) -> Self {
        if let ReplyBody::Stream(spec) = &mut self.body {
            spec.end = end;
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
            ReplyBody::Stream(mut spec) => {
                // Like the API: no thinking unless the request turned it on.
                if request["thinking"]["type"] != "enabled" {
                    spec.blocks
                        .retain(|b| !matches!(b, Block::Thinking(_) | Block::RedactedThinking(_)));
                }
                let end = match spec.end {
                    End::Stall => StreamEnd::Stall,
                    _ => StreamEnd::Close,
                };
                let frames = events(&spec, request)
                    .into_iter()
                    .map(|event| {
                        format!(
                            "event: {}\ndata: {event}\n\n",
                            event["type"].as_str().unwrap_or("")
                        )
                    })
                    .collect();
                sse_response(frames, self.chunk_delay, end, shutdown)
            }
        };
        with_headers(response, self.headers)
    }
}

/// Anthropic's error body: `{"type":"error","error":{"type":KIND,"message":…}}`.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// The whole event sequence of one streamed message.
fn events(spec: &StreamSpec, request: &Value) -> Vec<Value> {
    let model = request["model"].as_str().unwrap_or("claude-fake");
    let estimated_input = request["messages"].to_string().len() as u64 / 4;
    let (input, output, read, write) = spec.usage.unwrap_or((estimated_input, 0, 0, 0));
    let mut events = vec![
        json!({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "content": [],
            "model": model, "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": write,
                      "cache_read_input_tokens": read, "output_tokens": 1}}}),
        json!({"type": "ping"}),
    ];
    let mut deltas = 0u64;
    for (index, block) in spec.blocks.iter().enumerate() {
        let (start, block_deltas) = block_events(block);
        deltas += block_deltas.len() as u64;
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.extend(
            block_deltas.into_iter().map(
                |delta| json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ),
        );
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    match &spec.end {
        End::Complete => {
            let output = if spec.usage.is_some() {
                output
            } else {
                deltas.max(1)
            };
            events.push(json!({"type": "message_delta",
                "delta": {"stop_reason": spec.stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output}}));
            events.push(json!({"type": "message_stop"}));
        }
        End::Error { kind, message } => {
            events.push(json!({"type": "error", "error": {"type": kind, "message": message}}));
        }
        End::Truncate | End::Stall => {}
    }
    events
}

/// The `content_block_start` payload and the deltas of one block.
fn block_events(block: &Block) -> (Value, Vec<Value>) {
    match block {
        Block::Text(text) => (
            json!({"type": "text", "text": ""}),
            words(text)
                .map(|w| json!({"type": "text_delta", "text": w}))
                .collect(),
        ),
        Block::Thinking(thinking) => {
            let mut deltas: Vec<Value> = words(thinking)
                .map(|w| json!({"type": "thinking_delta", "thinking": w}))
                .collect();
            deltas.push(json!({"type": "signature_delta", "signature": signature(thinking)}));
            (json!({"type": "thinking", "thinking": ""}), deltas)
        }
        Block::RedactedThinking(plain) => (
            json!({"type": "redacted_thinking", "data": redacted_data(plain)}),
            Vec::new(),
        ),
        Block::ToolUse { id, name, input } => {
            // The real API opens with an empty fragment, then splits anywhere.
            let mut deltas = vec![json!({"type": "input_json_delta", "partial_json": ""})];
            deltas.extend(
                split_in_three(&input.to_string())
                    .into_iter()
                    .map(|piece| json!({"type": "input_json_delta", "partial_json": piece})),
            );
            (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                deltas,
            )
        }
    }
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(' ')
}

fn fake_mac(kind: &str, text: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    ("fake-anthropic-signing-key", kind, text).hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// The signature the fake gives `thinking` (and checks when it comes back).
pub(super) fn signature(thinking: &str) -> String {
    format!("EqQB{}", fake_mac("thinking", thinking))
}

/// The opaque `data` of a redacted block the fake issues for `plain`.
fn redacted_data(plain: &str) -> String {
    let encoded: String = plain.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{}{encoded}", fake_mac("redacted", &encoded))
}

/// Whether `data` is a redacted block the fake issued, unmodified.
pub(super) fn is_redacted_data(data: &str) -> bool {
    data.get(..16)
        .zip(data.get(16..))
        .is_some_and(|(mac, encoded)| mac == fake_mac("redacted", encoded))
}
