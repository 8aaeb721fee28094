//! Decoding an OpenAI-compatible SSE response into [`Chunk`]s: tool-call fragments
//! assembled by index (and id), reasoning passed through, usage and in-stream errors.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::error as openai_error;
use crate::llm::endpoint::TextToolCalls;
use crate::llm::error::ProviderError;
use crate::llm::sse::{SseDecoder, Step};
use crate::llm::tool_call_text::{generate_call_id, ToolCallTextFilter};
use crate::llm::types::{Chunk, ToolCall, Usage};

/// The pure part of stream decoding: SSE `data` payloads in, chunks out.
#[derive(Debug)]
pub(crate) struct StreamDecoder {
    calls: ToolCallAssembler,
    text_filter: Option<ToolCallTextFilter>,
    /// The last usage seen; some servers repeat cumulative usage, so it is sent once.
    usage: Option<Usage>,
    /// The reasoning so far, to be kept for sending back.
    reasoning: String,
    saw_data: bool,
    /// Whether the model made native tool calls (auto mode then runs no text ones).
    native_calls: bool,
}

impl StreamDecoder {
    /// A decoder parsing text tool calls as `text_calls` allows; `results` are
    /// the request's tool results, which a text call must not repeat.
    pub(crate) fn new(text_calls: TextToolCalls, results: Vec<String>) -> Self {
        Self {
            calls: ToolCallAssembler::default(),
            text_filter: ToolCallTextFilter::new(text_calls, results),
            usage: None,
            reasoning: String::new(),
            saw_data: false,
            native_calls: false,
        }
    }

    /// Handles the `data` of one SSE event.
    fn data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<Step, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.saw_data = true;
            return Ok(Step::Done);
        }
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        let value: Value = serde_json::from_str(data).map_err(|error| {
            ProviderError::InvalidResponse(format!("a stream event is not JSON ({error})"))
        })?;
        self.saw_data = true;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            return Err(openai_error::from_error_object(error));
        }
        let chunk: WireChunk = serde_json::from_value(value).map_err(|error| {
            ProviderError::InvalidResponse(format!("unexpected stream event shape ({error})"))
        })?;
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() else {
            return Ok(Step::Continue);
        };
        if let Some(delta) = choice.delta {
            let thinking = delta.reasoning_content.or(delta.reasoning);
            if let Some(thinking) = thinking.filter(|t| !t.is_empty()) {
                self.reasoning.push_str(&thinking);
                out.push(Chunk::Thinking(thinking));
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                let shown = match &mut self.text_filter {
                    Some(filter) => filter.push(&text),
                    None => text,
                };
                if !shown.is_empty() {
                    out.push(Chunk::Text(shown));
                }
            }
            for fragment in delta.tool_calls.unwrap_or_default() {
                self.calls.add(fragment);
            }
        }
        if choice.finish_reason.is_some() {
            self.flush_calls(out);
        }
        Ok(Step::Continue)
    }

    /// Ends the stream: held-back text, remaining and text-parsed calls, usage.
    fn finish(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        if !self.saw_data {
            return Err(ProviderError::InvalidResponse(
                "the response is not an event stream (no data events)".to_owned(),
            ));
        }
        if !self.reasoning.is_empty() {
            out.push(Chunk::ReasoningContent(std::mem::take(&mut self.reasoning)));
        }
        let mut text_calls = Vec::new();
        let native_calls = self.native_calls || !self.calls.calls.is_empty();
        if let Some(filter) = &mut self.text_filter {
            let (rest, calls) = filter.finish(native_calls);
            if !rest.is_empty() {
                out.push(Chunk::Text(rest));
            }
            text_calls = calls;
        }
        self.flush_calls(out);
        if !text_calls.is_empty() {
            out.push(Chunk::ToolCalls(text_calls));
        }
        if let Some(usage) = self.usage.take() {
            out.push(Chunk::Usage(usage));
        }
        Ok(())
    }

    fn flush_calls(&mut self, out: &mut Vec<Chunk>) {
        let calls = self.calls.take();
        if !calls.is_empty() {
            self.native_calls = true;
            out.push(Chunk::ToolCalls(calls));
        }
    }
}

impl SseDecoder for StreamDecoder {
    fn on_data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<Step, ProviderError> {
        let step = self.data(data, out)?;
        if step == Step::Done {
            self.finish(out)?;
        }
        Ok(step)
    }

    fn on_end(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        self.finish(out)
    }
}

/// Tool-call fragments assembled into calls, in the order the calls began.
#[derive(Debug, Default)]
struct ToolCallAssembler {
    calls: Vec<ToolCall>,
    /// The call each wire `index` currently feeds.
    by_index: HashMap<u32, usize>,
    /// The call the last fragment went to.
    last: Option<usize>,
}

impl ToolCallAssembler {
    fn add(&mut self, fragment: WireToolCall) {
        let id = fragment.id.filter(|id| !id.is_empty());
        let at = match fragment.index {
            Some(index) => match self.by_index.get(&index) {
                // Another id at a used index is the next call: some proxies
                // number every call 0.
                Some(&at)
                    if id.as_deref().is_none_or(|id| {
                        self.calls[at].id.is_empty() || self.calls[at].id == id
                    }) =>
                {
                    at
                }
                _ => {
                    let at = self.open();
                    self.by_index.insert(index, at);
                    at
                }
            },
            // Servers that omit `index` start a new call with each new id.
            None => match id.as_deref() {
                Some(id) => match self.calls.iter().position(|call| call.id == id) {
                    Some(at) => at,
                    None => self.open(),
                },
                None => match self.last {
                    Some(last) => last,
                    None => self.open(),
                },
            },
        };
        self.last = Some(at);
        let call = &mut self.calls[at];
        if let Some(id) = id {
            if call.id.is_empty() {
                call.id = id;
            }
        }
        let Some(function) = fragment.function else {
            return;
        };
        if let Some(name) = function.name.filter(|n| !n.is_empty()) {
            // Most servers send the name once; a repeat of the whole name is ignored,
            // pieces are joined.
            if call.name != name {
                call.name.push_str(&name);
            }
        }
        match function.arguments {
            Some(Value::String(piece)) => call.arguments.push_str(&piece),
            Some(Value::Null) | None => {}
            Some(other) => call.arguments.push_str(&other.to_string()),
        }
    }

    /// Starts an empty call; returns its position.
    fn open(&mut self) -> usize {
        self.calls.push(ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
        self.calls.len() - 1
    }

    fn take(&mut self) -> Vec<ToolCall> {
        self.last = None;
        self.by_index.clear();
        std::mem::take(&mut self.calls)
            .into_iter()
            .filter(|call| !call.name.is_empty())
            .map(|mut call| {
                if call.id.is_empty() {
                    call.id = generate_call_id();
                }
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".to_owned();
                }
                call
            })
            .collect()
    }
}

#[derive(Debug, Deserialize)]
struct WireChunk {
    choices: Option<Vec<WireChoice>>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    delta: Option<WireDelta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireDelta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    index: Option<u32>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<WirePromptDetails>,
    /// DeepSeek's name for cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct WirePromptDetails {
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        let cached = usage
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .or(usage.prompt_cache_hit_tokens);
        Usage {
            input_tokens: usage.prompt_tokens.unwrap_or(0),
            output_tokens: usage.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached.unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(events: &[&str], parse_tool_text: bool) -> Result<Vec<Chunk>, ProviderError> {
        let mode = if parse_tool_text {
            TextToolCalls::On
        } else {
            TextToolCalls::Off
        };
        decode_with(events, mode)
    }

    fn decode_with(events: &[&str], mode: TextToolCalls) -> Result<Vec<Chunk>, ProviderError> {
        let mut decoder = StreamDecoder::new(mode, Vec::new());
        let mut out = Vec::new();
        for event in events {
            if decoder.on_data(event, &mut out)? == Step::Done {
                return Ok(out);
            }
        }
        decoder.on_end(&mut out)?;
        Ok(out)
    }

    fn call(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> String {
        serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": id, "type": "function",
             "function": {"name": name, "arguments": args}}
        ]}, "finish_reason": null}]})
        .to_string()
    }

    #[test]
    fn parallel_calls_are_assembled_by_index() {
        let events = [
            call(0, Some("a"), Some("read_file"), ""),
            call(1, Some("b"), Some("ls"), "{\"di"),
            call(0, None, None, "{\"path\": \"x"),
            call(1, None, None, "r\": 1}"),
            call(0, None, None, "\"}"),
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#.to_owned(),
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,
                "prompt_tokens_details":{"cached_tokens":4}}}"#
                .to_owned(),
            "[DONE]".to_owned(),
        ];
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        let chunks = decode(&events, false).map_err(|e| e.to_string());
        let expected = vec![
            Chunk::ToolCalls(vec![
                ToolCall {
                    id: "a".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path": "x"}"#.into(),
                },
                ToolCall {
                    id: "b".into(),
                    name: "ls".into(),
                    arguments: r#"{"dir": 1}"#.into(),
                },
            ]),
            Chunk::Usage(Usage {
                input_tokens: 9,
                output_tokens: 3,
                cache_read_tokens: 4,
                cache_write_tokens: 0,
            }),
        ];
        assert_eq!(chunks, Ok(expected));
    }

    #[test]
    fn distinct_ids_at_one_index_are_distinct_calls() {
        // Some proxies number every call 0; the new id marks the next call.
        let events = [
            call(0, Some("call_a"), Some("read_file"), ""),
            call(0, None, None, "{\"path\": \"a\"}"),
            call(0, Some("call_b"), Some("ls"), ""),
            call(0, None, None, "{\"dir\": \"."),
            // A repeat of the current id stays with its call.
            call(0, Some("call_b"), None, "\"}"),
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#.to_owned(),
        ];
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        let chunks = decode(&events, false).map_err(|e| e.to_string());
        let expected = vec![Chunk::ToolCalls(vec![
            ToolCall {
                id: "call_a".into(),
                name: "read_file".into(),
                arguments: r#"{"path": "a"}"#.into(),
            },
            ToolCall {
                id: "call_b".into(),
                name: "ls".into(),
                arguments: r#"{"dir": "."}"#.into(),
            },
        ])];
        assert_eq!(chunks, Ok(expected));
    }

    #[test]
    fn missing_id_and_index_are_tolerated() -> Result<(), String> {
        let events = [
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"b"}}]}}]}"#,
        ];
        let chunks = decode(&events, false).map_err(|e| e.to_string());
        let Ok([Chunk::ToolCalls(calls)]) = chunks.as_deref() else {
            return Err(format!("unexpected {chunks:?}"));
        };
        assert_eq!(calls.len(), 2);
        assert!(calls[0].id.starts_with("call_"));
        assert_eq!(
            (calls[1].id.as_str(), calls[1].arguments.as_str()),
            ("x", "{}")
        );
        Ok(())
    }

    #[test]
    fn text_reasoning_and_tool_call_text() -> Result<(), String> {
        let events = [
            r#"{"choices":[{"delta":{"role":"assistant","reasoning_content":"hmm"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"!","content":"Hi <tool"}}]}"#,
            r#"{"choices":[{"delta":{"content":"_call>{\"name\":\"ls\"}</tool_call>"}}]}"#,
        ];
        let chunks = decode(&events, true).map_err(|e| e.to_string());
        let Ok([thinking1, thinking2, text, reasoning, Chunk::ToolCalls(calls)]) =
            chunks.as_deref()
        else {
            return Err(format!("unexpected {chunks:?}"));
        };
        assert_eq!(thinking1, &Chunk::Thinking("hmm".into()));
        assert_eq!(thinking2, &Chunk::Thinking("!".into()));
        assert_eq!(
            reasoning,
            &Chunk::ReasoningContent("hmm!".into()),
            "the whole reasoning, to send back"
        );
        assert_eq!(text, &Chunk::Text("Hi ".into()));
        assert_eq!(calls[0].name, "ls");
        Ok(())
    }

    #[test]
    fn auto_runs_no_text_call_next_to_a_native_one() -> Result<(), String> {
        let block =
            r#"{"choices":[{"delta":{"content":"<tool_call>{\"name\":\"ls\"}</tool_call>"}}]}"#;
        let native = call(0, Some("n1"), Some("read_file"), "{}");
        let events = [block, native.as_str(), "[DONE]"];
        let chunks = decode_with(&events, TextToolCalls::Auto).map_err(|e| e.to_string())?;
        let [Chunk::Text(text), Chunk::ToolCalls(calls)] = chunks.as_slice() else {
            return Err(format!("unexpected {chunks:?}"));
        };
        assert_eq!(text, r#"<tool_call>{"name":"ls"}</tool_call>"#);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "read_file");
        // Alone, the same block is the answer's call.
        let chunks = decode_with(&[block, "[DONE]"], TextToolCalls::Auto);
        let Ok([Chunk::ToolCalls(calls)]) = chunks.as_deref() else {
            return Err(format!("unexpected {chunks:?}"));
        };
        assert_eq!(calls[0].name, "ls");
        Ok(())
    }

    #[test]
    fn malformed_streams_are_invalid() {
        assert!(matches!(
            decode(&["not json"], false),
            Err(ProviderError::InvalidResponse(_))
        ));
        assert!(matches!(
            decode(&[], false),
            Err(ProviderError::InvalidResponse(_))
        ));
        assert!(matches!(
            decode(&[r#"{"choices":"nope"}"#], false),
            Err(ProviderError::InvalidResponse(_))
        ));
        assert!(matches!(
            decode(
                &[r#"{"error":{"message":"quota","type":"rate_limit_error"}}"#],
                false
            ),
            Err(ProviderError::RateLimited { .. })
        ));
    }
}
