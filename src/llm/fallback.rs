//! An ordered list of providers used as one: each call goes to the first one
//! not cooling down after a recoverable failure (429, timeout, network, 5xx);
//! configuration errors (bad key, unknown model, other 4xx) are returned as they
//! are, since another endpoint would not make the request right. The model
//! metadata (context window) is that of the provider that served last.

use super::{ChatRequest, ChunkStream, ModelInfo, Provider, ProviderError};
use async_trait::async_trait;
use futures::StreamExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a provider that failed recoverably is passed over.
pub const COOLDOWN: Duration = Duration::from_secs(60);

pub struct FallbackProvider {
    chain: Vec<Arc<dyn Provider>>,
    /// Shared with the streams, which report failures after their first chunk.
    health: Arc<Health>,
    /// The provider that served last.
    active: AtomicUsize,
}

/// Until when each provider of the chain is passed over.
struct Health {
    cooling: Vec<Mutex<Option<Instant>>>,
    models: Vec<String>,
}

impl Health {
    fn cool(&self, i: usize) {
        if let Some(slot) = self.cooling.get(i) {
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + COOLDOWN);
        }
        tracing::warn!(
            provider = i,
            model = self.models.get(i).map_or("?", String::as_str),
            "model endpoint failed recoverably; passing it over for {COOLDOWN:?}"
        );
    }

    fn is_cooling(&self, i: usize) -> bool {
        self.cooling[i]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|until| Instant::now() < until)
    }
}

impl FallbackProvider {
    /// `primary` first, then `fallbacks` in order of preference.
    pub fn new(primary: Arc<dyn Provider>, fallbacks: Vec<Arc<dyn Provider>>) -> FallbackProvider {
        let chain: Vec<Arc<dyn Provider>> = std::iter::once(primary).chain(fallbacks).collect();
        let health = Health {
            cooling: chain.iter().map(|_| Mutex::new(None)).collect(),
            models: chain.iter().map(|p| p.model().name.clone()).collect(),
        };
        FallbackProvider {
            chain,
            health: Arc::new(health),
            active: AtomicUsize::new(0),
        }
    }

    /// Which provider served last (0 = the primary).
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Providers to try, in order: the ready ones, then (all else failing) the
    /// cooling ones rather than none.
    fn order(&self) -> Vec<usize> {
        let (ready, cooling): (Vec<usize>, Vec<usize>) =
            (0..self.chain.len()).partition(|&i| !self.health.is_cooling(i));
        ready.into_iter().chain(cooling).collect()
    }
}

#[async_trait]
impl Provider for FallbackProvider {
    fn model(&self) -> &ModelInfo {
        self.chain[self.active()].model()
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChunkStream, ProviderError> {
        let mut last = None;
        for i in self.order() {
            match self.chain[i].chat_stream(request.clone()).await {
                Ok(stream) => {
                    if self.active.swap(i, Ordering::Relaxed) != i {
                        tracing::info!(provider = i, model = %self.chain[i].model().name, "model endpoint in use");
                    }
                    // A recoverable failure mid-stream sends the next call
                    // (the runtime's retry) to the next provider.
                    let health = Arc::clone(&self.health);
                    return Ok(stream
                        .inspect(move |item| {
                            if let Err(e) = item {
                                if e.is_recoverable() {
                                    health.cool(i);
                                }
                            }
                        })
                        .boxed());
                }
                Err(e) if e.is_recoverable() => {
                    self.health.cool(i);
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| ProviderError::Network("no model endpoint answered".into())))
    }

    fn route(&self) -> Option<String> {
        let names = &self.health.models;
        Some(match self.active() {
            0 => format!(
                "primary in use; fallbacks: {}",
                names[1..].join(", ")
            ),
            i => format!(
                "fallback {i} in use (`{}`): the primary `{}` failed recently and is retried after a cooldown",
                names[i], names[0]
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Chunk, Message};
    use futures::stream;

    /// A provider that answers from a script of outcomes, one per call.
    struct Scripted {
        model: ModelInfo,
        outcomes: Mutex<Vec<Result<&'static str, ProviderError>>>,
    }

    impl Scripted {
        fn new(name: &str, outcomes: Vec<Result<&'static str, ProviderError>>) -> Arc<Scripted> {
            Arc::new(Scripted {
                model: ModelInfo::new(name, None),
                outcomes: Mutex::new(outcomes),
            })
        }
    }

    #[async_trait]
    impl Provider for Scripted {
        fn model(&self) -> &ModelInfo {
            &self.model
        }

        async fn chat_stream(&self, _: ChatRequest) -> Result<ChunkStream, ProviderError> {
            let next = self.outcomes.lock().unwrap().remove(0);
            next.map(|text| stream::iter([Ok(Chunk::Text(text.into()))]).boxed())
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            system: String::new(),
            messages: vec![Message::user("hi")],
            tools: Vec::new(),
        }
    }

    async fn text(p: &FallbackProvider) -> Result<String, ProviderError> {
        let mut out = String::new();
        let mut s = p.chat_stream(request()).await?;
        while let Some(c) = s.next().await {
            if let Chunk::Text(t) = c? {
                out.push_str(&t);
            }
        }
        Ok(out)
    }

    #[tokio::test]
    async fn recoverable_failures_move_to_the_next_and_config_errors_do_not() {
        let primary = Scripted::new(
            "claude-sonnet",
            vec![
                Err(ProviderError::RateLimited { retry_after: None }),
                Err(ProviderError::Config {
                    status: 401,
                    message: "bad key".into(),
                }),
            ],
        );
        let backup = Scripted::new("deepseek-chat", vec![Ok("from backup"), Ok("again")]);
        let p = FallbackProvider::new(primary, vec![backup]);
        assert_eq!(p.model().context_window, 200_000);
        assert_eq!(text(&p).await.unwrap(), "from backup");
        assert_eq!(p.active(), 1);
        assert_eq!(p.model().context_window, 64_000, "the window follows");
        // The primary cools down: the next call goes straight to the backup.
        assert_eq!(text(&p).await.unwrap(), "again");
        // Cooling over, the primary is tried again; a config error is final.
        *p.health.cooling[0].lock().unwrap() = None;
        let e = text(&p).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Config { status: 401, .. }),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn when_every_endpoint_fails_the_last_error_is_returned() {
        let a = Scripted::new(
            "a",
            vec![Err(ProviderError::Timeout(Duration::from_secs(60)))],
        );
        let b = Scripted::new(
            "b",
            vec![Err(ProviderError::Server {
                status: 503,
                message: "overloaded".into(),
            })],
        );
        let p = FallbackProvider::new(a, vec![b]);
        let e = text(&p).await.unwrap_err();
        assert!(
            matches!(e, ProviderError::Server { status: 503, .. }),
            "{e:?}"
        );
    }
}
