//! Driving a provider in tests: every chunk of a call and the error that ended it.

use futures::StreamExt;
use switchboard::llm::{ChatRequest, Chunk, Provider, ProviderError};

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
