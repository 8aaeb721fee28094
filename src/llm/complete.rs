//! One-shot side calls (summaries, extraction): a prompt in, the whole text out.

use super::{ChatRequest, Chunk, Message, Provider, ProviderError};
use futures::StreamExt;
use std::time::Duration;

/// Runs one model call without tools and returns its text; gives up after `limit`.
pub async fn complete(
    provider: &dyn Provider,
    system: &str,
    user: String,
    limit: Duration,
) -> Result<String, ProviderError> {
    let request = ChatRequest {
        system: system.to_owned(),
        messages: vec![Message::user(user)],
        tools: Vec::new(),
    };
    let call = async {
        let mut stream = provider.chat_stream(request).await?;
        let mut text = String::new();
        while let Some(chunk) = stream.next().await {
            if let Chunk::Text(t) = chunk? {
                text.push_str(&t);
            }
        }
        Ok(text)
    };
    tokio::time::timeout(limit, call)
        .await
        .map_err(|_| ProviderError::Timeout(limit))?
}
