//! The cheap model for side calls (memory extraction, learning, summaries,
//! reflections): `MODEL_ROUTE_CHEAP` looked up in the catalogue at each call —
//! a model added or changed while the gateway runs is used from then on —
//! falling back to the agent's own model when the catalogue has no such
//! model or it fails.

use super::Models;
use crate::llm::{ChatRequest, ChunkStream, FallbackProvider, ModelInfo, Provider, ProviderError};
use std::sync::Arc;

pub struct CheapRoute {
    models: Arc<Models>,
    name: String,
    fallback: Arc<dyn Provider>,
}

impl CheapRoute {
    pub fn new(models: Arc<Models>, name: &str, fallback: Arc<dyn Provider>) -> CheapRoute {
        CheapRoute {
            models,
            name: name.to_owned(),
            fallback,
        }
    }
}

#[async_trait::async_trait]
impl Provider for CheapRoute {
    /// The agent's model: what a side call is measured against when the
    /// cheap one is not there.
    fn model(&self) -> &ModelInfo {
        self.fallback.model()
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChunkStream, ProviderError> {
        match self.models.named(&self.name).await {
            Some(cheap) => {
                FallbackProvider::new(cheap.provider, vec![Arc::clone(&self.fallback)])
                    .chat_stream(request)
                    .await
            }
            None => self.fallback.chat_stream(request).await,
        }
    }

    fn route(&self) -> Option<String> {
        Some(self.name.clone())
    }

    fn has_fallbacks(&self) -> bool {
        true
    }
}
