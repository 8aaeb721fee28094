//! Unit tests of the Anthropic stream decoder.

use serde_json::json;

use super::*;

fn decode(events: &[serde_json::Value]) -> Result<Vec<Chunk>, ProviderError> {
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for event in events {
        if decoder.on_data(&event.to_string(), &mut out)? == Step::Done {
            return Ok(out);
        }
    }
    decoder.on_end(&mut out).map(|()| out)
}

fn start() -> serde_json::Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "model": "m", "stop_reason": null,
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": 1000, "output_tokens": 1}}})
}

fn end(output: u64) -> [serde_json::Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": output}}),
        json!({"type": "message_stop"}),
    ]
}

#[test]
fn text_thinking_tool_calls_and_usage() {
    let mut events = vec![
        start(),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi "}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "there"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "ls", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "content_block_stop", "index": 3}),
        json!({"type": "some_future_event", "x": 1}),
    ];
    events.extend(end(42));
    let chunks = decode(&events).map_err(|e| e.to_string());
    let expected = vec![
        Chunk::Thinking("hmm".into()),
        Chunk::SignedReasoning(SignedReasoning::Thinking {
            thinking: "hmm".into(),
            signature: "sig".into(),
        }),
        Chunk::Text("Hi ".into()),
        Chunk::Text("there".into()),
        Chunk::ToolCalls(vec![
            ToolCall {
                id: "toolu_a".into(),
                name: "read_file".into(),
                arguments: r#"{"path": "a"}"#.into(),
            },
            ToolCall {
                id: "toolu_b".into(),
                name: "ls".into(),
                arguments: "{}".into(),
            },
        ]),
        Chunk::Usage(Usage {
            input_tokens: 1110,
            output_tokens: 42,
            cache_read_tokens: 1000,
            cache_write_tokens: 100,
        }),
    ];
    assert_eq!(chunks, Ok(expected));
}

#[test]
fn a_stream_without_message_stop_is_invalid() {
    let events = [
        start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}}),
    ];
    assert!(matches!(
        decode(&events),
        Err(ProviderError::InvalidResponse(message)) if message.contains("message_stop")
    ));
}

#[test]
fn error_events_and_garbage_are_classified() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let error = decode(&[start(), overloaded]);
    assert!(matches!(
        error,
        Err(ProviderError::Server { status: 529, .. })
    ));
    let mut decoder = Decoder::default();
    assert!(matches!(
        decoder.on_data("not json", &mut Vec::new()),
        Err(ProviderError::InvalidResponse(_))
    ));
    let stray = json!({"type": "content_block_delta", "index": 5,
        "delta": {"type": "input_json_delta", "partial_json": "{"}});
    assert!(matches!(
        decode(&[start(), stray]),
        Err(ProviderError::InvalidResponse(_))
    ));
}

#[test]
fn later_cumulative_usage_replaces_earlier() {
    let mut events = vec![start()];
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"input_tokens": 12, "output_tokens": 5}}),
    );
    events.extend(end(7));
    let chunks = decode(&events).map_err(|e| e.to_string());
    assert_eq!(
        chunks.as_deref().ok().and_then(<[Chunk]>::last),
        Some(&Chunk::Usage(Usage {
            input_tokens: 1112,
            output_tokens: 7,
            cache_read_tokens: 1000,
            cache_write_tokens: 100,
        }))
    );
}

#[test]
fn redacted_thinking_is_kept_and_a_stray_signature_is_refused() {
    let mut events = vec![
        start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "thinking_delta", "thinking": "unsigned"}}),
        json!({"type": "content_block_stop", "index": 1}),
    ];
    events.extend(end(1));
    let chunks = decode(&events).unwrap_or_default();
    assert_eq!(
        chunks[0],
        Chunk::SignedReasoning(SignedReasoning::RedactedThinking {
            data: "EmwKAhgBEgy".into()
        })
    );
    assert_eq!(
        chunks
            .iter()
            .filter(|c| matches!(c, Chunk::SignedReasoning(_)))
            .count(),
        1,
        "thinking without a signature cannot be sent back: {chunks:?}"
    );

    let stray = [
        start(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "x"}}),
    ];
    assert!(matches!(
        decode(&stray),
        Err(ProviderError::InvalidResponse(_))
    ));
}
