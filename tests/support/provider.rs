//! Driving a provider in tests: every chunk of a call and the error that ended
//! it, and the text, thinking and tool calls among the chunks.

use futures::StreamExt;
use switchboard::llm::{ChatRequest, Chunk, Provider, ProviderError, SignedReasoning, ToolCall};

/// Every chunk up to the end of the stream, and the error that ended it, if any.
pub async fn run(
    provider: &dyn Provider,
    request: ChatRequest,
) -> (Vec<Chunk>, Option<ProviderError>) {
    let mut stream = match provider.chat_stream(request).await {
        Ok(stream) => stream,
        Err(error) => return (Vec::new(), Some(error)),
    };
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(error) => return (chunks, Some(error)),
        }
    }
    (chunks, None)
}

/// The streamed text.
pub fn text(chunks: &[Chunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The streamed thinking.
pub fn thinking(chunks: &[Chunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Every signed reasoning block, in order.
pub fn signed(chunks: &[Chunk]) -> Vec<SignedReasoning> {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::SignedReasoning(block) => Some(block.clone()),
            _ => None,
        })
        .collect()
}

/// Every tool call, in order.
pub fn calls(chunks: &[Chunk]) -> Vec<ToolCall> {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolCalls(calls) => Some(calls.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}
