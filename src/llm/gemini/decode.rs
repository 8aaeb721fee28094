//! Decoding the `data` payloads of a Gemini stream (`GenerateContentResponse`s)
//! into [`Chunk`]s: text, thoughts, function calls, the finish reason and usage.

use serde::Deserialize;
use serde_json::Value;

use super::call_id;
use super::error;
use crate::llm::error::ProviderError;
use crate::llm::sse::{SseDecoder, Step};
use crate::llm::types::{Chunk, ToolCall, Usage};

/// Finish reasons of an answer that ended normally.
const NORMAL_FINISH: [&str; 3] = ["STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED"];

/// Finish reasons of an answer a model glitch spoiled (another try may work).
const GLITCH_FINISH: [&str; 4] = [
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "OTHER",
];

/// The pure part of stream decoding.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    calls: Vec<ToolCall>,
    /// Gemini repeats cumulative usage; the last one is sent once at the end.
    usage: Option<Usage>,
    finish_reason: Option<String>,
    saw_data: bool,
    saw_content: bool,
}

impl Decoder {
    /// Handles the `data` of one SSE event.
    fn data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::InvalidResponse(format!("a stream event is not JSON ({e})"))
        })?;
        self.saw_data = true;
        if let Some(error) = value.get("error").filter(|e| e.is_object()) {
            return Err(error::from_error_object(error));
        }
        let response: WireResponse = serde_json::from_value(value).map_err(|e| {
            ProviderError::InvalidResponse(format!("unexpected stream event shape ({e})"))
        })?;
        if let Some(reason) = response.prompt_feedback.and_then(|f| f.block_reason) {
            return Err(ProviderError::Config {
                status: 200,
                message: format!("Gemini blocked the prompt (blockReason {reason})"),
            });
        }
        if let Some(usage) = response.usage_metadata {
            self.usage = Some(usage.into());
        }
        let Some(candidate) = response.candidates.into_iter().next() else {
            return Ok(());
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.on_part(part, out);
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish_reason = Some(reason);
        }
        Ok(())
    }

    fn on_part(&mut self, part: WirePart, out: &mut Vec<Chunk>) {
        if let Some(call) = part.function_call {
            let arguments = match call.args {
                Some(Value::Null) | None => "{}".to_owned(),
                Some(args) => args.to_string(),
            };
            self.calls.push(ToolCall {
                id: call_id::encode(call.id.as_deref(), part.thought_signature.as_deref()),
                name: call.name,
                arguments,
            });
            self.saw_content = true;
            return;
        }
        let Some(text) = part.text.filter(|t| !t.is_empty()) else {
            return;
        };
        self.saw_content = true;
        out.push(if part.thought {
            Chunk::Thinking(text)
        } else {
            Chunk::Text(text)
        });
    }

    /// Ends the stream (the body ended): calls, a note on an abnormal finish, usage.
    fn finish(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        if !self.saw_data {
            return Err(ProviderError::InvalidResponse(
                "the response is not an event stream (no data events)".to_owned(),
            ));
        }
        let Some(reason) = self.finish_reason.take() else {
            return Err(ProviderError::InvalidResponse(
                "the stream ended without a finishReason (cut off)".to_owned(),
            ));
        };
        if !NORMAL_FINISH.contains(&reason.as_str()) {
            if !self.saw_content {
                return Err(abnormal_finish(&reason));
            }
            // Partial output stays visible, with the reason it stopped.
            out.push(Chunk::Text(format!(
                "\n\n(the answer was stopped early: {reason})"
            )));
        }
        let calls = std::mem::take(&mut self.calls);
        if !calls.is_empty() {
            out.push(Chunk::ToolCalls(calls));
        }
        if let Some(usage) = self.usage.take() {
            out.push(Chunk::Usage(usage));
        }
        Ok(())
    }
}

/// The error of a finish without any content: a glitch is an invalid response,
/// a policy stop (SAFETY, RECITATION, BLOCKLIST, ...) a refusal.
/// Gemini sends no end marker: the end of the body is the end of the answer.
impl SseDecoder for Decoder {
    fn on_data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<Step, ProviderError> {
        self.data(data, out).map(|()| Step::Continue)
    }

    fn on_end(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        self.finish(out)
    }
}

fn abnormal_finish(reason: &str) -> ProviderError {
    let message = format!("the model stopped without an answer (finishReason {reason})");
    if GLITCH_FINISH.contains(&reason) {
        ProviderError::InvalidResponse(message)
    } else {
        ProviderError::Config {
            status: 200,
            message,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    #[serde(default)]
    candidates: Vec<WireCandidate>,
    usage_metadata: Option<WireUsage>,
    prompt_feedback: Option<WireFeedback>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCandidate {
    content: Option<WireContent>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireContent {
    #[serde(default)]
    parts: Vec<WirePart>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    thought_signature: Option<String>,
    function_call: Option<WireFunctionCall>,
}

#[derive(Debug, Deserialize)]
struct WireFunctionCall {
    id: Option<String>,
    name: String,
    args: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireFeedback {
    block_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

/// Like the OpenAI provider: input counts the whole prompt (cached tokens
/// included, also reported apart), output counts everything generated — answer
/// and thoughts (OpenAI's completion tokens include reasoning; Gemini's
/// `candidatesTokenCount` does not).
impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: usage.prompt_token_count.unwrap_or(0),
            output_tokens: usage.candidates_token_count.unwrap_or(0)
                + usage.thoughts_token_count.unwrap_or(0),
            cache_read_tokens: usage.cached_content_token_count.unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(events: &[Value]) -> Result<Vec<Chunk>, ProviderError> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for event in events {
            decoder.on_data(&event.to_string(), &mut out)?;
        }
        decoder.on_end(&mut out)?;
        Ok(out)
    }

    fn parts(parts: Value, finish: Option<&str>) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts},
            "finishReason": finish, "index": 0}]})
    }

    #[test]
    fn text_thoughts_calls_and_usage() -> Result<(), ProviderError> {
        let mut last = parts(
            json!([{"functionCall": {"name": "ls", "args": {"dir": "."}}, "thoughtSignature": "c2ln"}]),
            Some("STOP"),
        );
        last["usageMetadata"] = json!({"promptTokenCount": 10, "candidatesTokenCount": 4,
            "cachedContentTokenCount": 6, "thoughtsTokenCount": 3, "totalTokenCount": 17});
        let chunks = decode(&[
            parts(json!([{"text": "hmm", "thought": true}]), None),
            parts(json!([{"text": "Hi "}]), None),
            last,
        ])?;
        let [Chunk::Thinking(thought), Chunk::Text(text), Chunk::ToolCalls(calls), Chunk::Usage(usage)] =
            chunks.as_slice()
        else {
            panic!("unexpected {chunks:?}");
        };
        assert_eq!((thought.as_str(), text.as_str()), ("hmm", "Hi "));
        assert_eq!(calls[0].name, "ls");
        assert_eq!(calls[0].arguments, r#"{"dir":"."}"#);
        assert_eq!(call_id::decode(&calls[0].id).signature, Some("c2ln"));
        assert_eq!(
            *usage,
            Usage {
                input_tokens: 10,
                output_tokens: 7,
                cache_read_tokens: 6,
                cache_write_tokens: 0
            }
        );
        Ok(())
    }

    #[test]
    fn abnormal_ends() {
        assert!(matches!(
            decode(&[parts(json!([{"text": "cut"}]), None)]),
            Err(ProviderError::InvalidResponse(m)) if m.contains("finishReason")
        ));
        assert!(matches!(
            decode(&[]),
            Err(ProviderError::InvalidResponse(_))
        ));
        assert!(matches!(
            decode(&[json!({"candidates": [{"finishReason": "SAFETY"}]})]),
            Err(ProviderError::Config { status: 200, message }) if message.contains("SAFETY")
        ));
        assert!(matches!(
            decode(&[json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]})]),
            Err(ProviderError::InvalidResponse(_))
        ));
        assert!(matches!(
            decode(&[json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})]),
            Err(ProviderError::Config { .. })
        ));
        let partial = decode(&[parts(json!([{"text": "Once upon"}]), Some("RECITATION"))]);
        assert!(matches!(
            partial.as_deref(),
            Ok([Chunk::Text(_), Chunk::Text(note)]) if note.contains("RECITATION")
        ));
    }
}
