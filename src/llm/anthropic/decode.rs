//! The pure part of reading an Anthropic stream: SSE `data` payloads in, chunks
//! out — text and thinking deltas as they come, `tool_use` input assembled per
//! block, tool calls and usage once `message_stop` arrives.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::error::from_error_event;
use crate::llm::error::ProviderError;
use crate::llm::sse::{SseDecoder, Step};
use crate::llm::tool_call_text::generate_call_id;
use crate::llm::types::{Chunk, SignedReasoning, ToolCall, Usage};

/// Decodes one message stream.
#[derive(Debug, Default)]
pub(super) struct Decoder {
    /// Open content blocks by index.
    blocks: BTreeMap<u64, Block>,
    /// Completed tool calls in the order their blocks ended.
    calls: Vec<ToolCall>,
    usage: WireUsage,
    stop_reason: Option<String>,
}

#[derive(Debug)]
enum Block {
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
    /// Thinking is streamed as it comes and kept, with its signature, to be
    /// sent back while the tool loop goes on.
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    /// Text and anything else whose deltas need no assembly.
    Streamed,
}

impl SseDecoder for Decoder {
    /// Handles the `data` of one SSE event (the JSON carries its own `type`).
    fn on_data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<Step, ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        let event: Event = serde_json::from_str(data).map_err(|error| {
            ProviderError::InvalidResponse(format!("unexpected stream event ({error})"))
        })?;
        match event {
            Event::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage.merge(usage);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out),
            Event::ContentBlockDelta { index, delta } => self.delta(index, delta, out)?,
            Event::ContentBlockStop { index } => self.stop_block(index, out),
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.usage.merge(usage);
                }
            }
            Event::MessageStop => {
                self.finish(out);
                return Ok(Step::Done);
            }
            Event::Error { error } => return Err(from_error_event(&error)),
            Event::Ping | Event::Unknown => {}
        }
        Ok(Step::Continue)
    }

    /// The end of the body: only fine after `message_stop`, which returns
    /// [`Step::Done`] and is never followed by this call.
    fn on_end(&mut self, _out: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        Err(ProviderError::InvalidResponse(
            "the stream ended before message_stop".to_owned(),
        ))
    }
}

impl Decoder {
    fn start_block(&mut self, index: u64, block: WireBlock, out: &mut Vec<Chunk>) {
        let block = match block {
            WireBlock::ToolUse { id, name } => Block::ToolUse {
                id,
                name,
                input: String::new(),
            },
            WireBlock::Text { text } => {
                push_text(out, Chunk::Text, text);
                Block::Streamed
            }
            WireBlock::Thinking {
                thinking,
                signature,
            } => {
                push_text(out, Chunk::Thinking, thinking.clone());
                Block::Thinking {
                    thinking,
                    signature,
                }
            }
            WireBlock::RedactedThinking { data } => Block::RedactedThinking { data },
            WireBlock::Other => Block::Streamed,
        };
        self.blocks.insert(index, block);
    }

    fn delta(
        &mut self,
        index: u64,
        delta: WireDelta,
        out: &mut Vec<Chunk>,
    ) -> Result<(), ProviderError> {
        match delta {
            WireDelta::TextDelta { text } => push_text(out, Chunk::Text, text),
            WireDelta::ThinkingDelta { thinking } => {
                if let Some(Block::Thinking { thinking: kept, .. }) = self.blocks.get_mut(&index) {
                    kept.push_str(&thinking);
                }
                push_text(out, Chunk::Thinking, thinking);
            }
            WireDelta::SignatureDelta { signature } => match self.blocks.get_mut(&index) {
                Some(Block::Thinking {
                    signature: kept, ..
                }) => kept.push_str(&signature),
                _ => {
                    return Err(ProviderError::InvalidResponse(format!(
                        "signature_delta for block {index}, which is not a thinking block"
                    )))
                }
            },
            WireDelta::InputJsonDelta { partial_json } => match self.blocks.get_mut(&index) {
                Some(Block::ToolUse { input, .. }) => input.push_str(&partial_json),
                _ => {
                    return Err(ProviderError::InvalidResponse(format!(
                        "input_json_delta for block {index}, which is not a tool_use"
                    )))
                }
            },
            WireDelta::Other => {}
        }
        Ok(())
    }

    fn stop_block(&mut self, index: u64, out: &mut Vec<Chunk>) {
        match self.blocks.remove(&index) {
            Some(Block::ToolUse { id, name, input }) => self.calls.push(tool_call(id, name, input)),
            // Unsigned thinking cannot be sent back; it was shown, that is all.
            Some(Block::Thinking {
                thinking,
                signature,
            }) if !signature.is_empty() => {
                out.push(Chunk::SignedReasoning(SignedReasoning::Thinking {
                    thinking,
                    signature,
                }))
            }
            Some(Block::RedactedThinking { data }) if !data.is_empty() => {
                out.push(Chunk::SignedReasoning(SignedReasoning::RedactedThinking {
                    data,
                }))
            }
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<Chunk>) {
        // Blocks never closed still count (their input is whatever arrived).
        for (_, block) in std::mem::take(&mut self.blocks) {
            if let Block::ToolUse { id, name, input } = block {
                self.calls.push(tool_call(id, name, input));
            }
        }
        if let Some(reason) = &self.stop_reason {
            tracing::debug!(stop_reason = %reason, "anthropic message ended");
        }
        let calls = std::mem::take(&mut self.calls);
        if !calls.is_empty() {
            out.push(Chunk::ToolCalls(calls));
        }
        out.push(Chunk::Usage(self.usage.total()));
    }
}

fn push_text(out: &mut Vec<Chunk>, make: fn(String) -> Chunk, text: String) {
    if !text.is_empty() {
        out.push(make(text));
    }
}

fn tool_call(id: String, name: String, input: String) -> ToolCall {
    ToolCall {
        id: if id.is_empty() {
            generate_call_id()
        } else {
            id
        },
        name,
        arguments: if input.trim().is_empty() {
            "{}".to_owned()
        } else {
            input
        },
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        delta: Option<WireMessageDelta>,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    /// New event types may appear at any time; they are ignored.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireMessageDelta {
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        name: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    /// `citations_delta`, …
    #[serde(other)]
    Other,
}

/// Anthropic's usage; `input_tokens` excludes cache reads and writes. Every field
/// is cumulative, so a later value replaces an earlier one.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    fn merge(&mut self, later: WireUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    /// Our [`Usage`] counts the whole prompt in `input_tokens` (like OpenAI's
    /// `prompt_tokens`), cached parts included.
    fn total(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + read + write,
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }
}

#[cfg(test)]
mod tests;
