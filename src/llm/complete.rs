//! One-shot side calls (summaries, extraction): a prompt in, the whole text out.

use super::{ChatRequest, Chunk, Message, Provider, ProviderError, Usage};
use futures::StreamExt;
use std::time::Duration;

/// Runs one model call without tools and returns its text; gives up after `limit`.
pub async fn complete(
    provider: &dyn Provider,
    system: &str,
    user: String,
    limit: Duration,
) -> Result<String, ProviderError> {
    Ok(complete_counted(provider, system, user, limit).await?.0)
}

/// [`complete`], with the tokens the call used (for the user's usage).
pub async fn complete_counted(
    provider: &dyn Provider,
    system: &str,
    user: String,
    limit: Duration,
) -> Result<(String, Usage), ProviderError> {
    let request = ChatRequest {
        system: system.to_owned(),
        messages: vec![Message::user(user)],
        tools: Vec::new(),
    };
    let call = async {
        let mut stream = provider.chat_stream(request).await?;
        let (mut text, mut usage) = (String::new(), Usage::default());
        while let Some(chunk) = stream.next().await {
            match chunk? {
                Chunk::Text(t) => text.push_str(&t),
                Chunk::Usage(u) => usage.add(&u),
                _ => {}
            }
        }
        Ok((text, usage))
    };
    tokio::time::timeout(limit, call)
        .await
        .map_err(|_| ProviderError::Timeout(limit))?
}
