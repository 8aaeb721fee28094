//! An ordered list of providers used as one: each call goes to the first one
//! not cooling down after a recoverable failure (429, timeout, network, 5xx);
//! configuration errors (bad key, unknown model, other 4xx) are returned as they
//! are, since another endpoint would not make the request right.
//!
//! The model metadata (context window) is that of the provider the next call
//! goes to first, so the runtime sizes its request for it. A request sized
//! for a larger window than a fallback's is not sent there past that window's
//! threshold (the API would refuse it as a configuration error); the call
//! fails with the primary's recoverable error instead, and the runtime's
//! retry sizes the request anew for the fallback now in front.

use super::{estimate_request_tokens, threshold};
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

    /// The provider the next call goes to first: the first one not cooling
    /// down, else the primary (see [`FallbackProvider::order`]).
    fn first(&self) -> usize {
        (0..self.chain.len())
            .find(|&i| !self.health.is_cooling(i))
            .unwrap_or(0)
    }

    /// Whether provider `i` cannot take a request sized for `sized_for`: its
    /// window is smaller and the request does not fit it.
    fn too_small(&self, i: usize, sized_for: u32, estimate: usize) -> bool {
        let window = self.chain[i].model().context_window;
        window < sized_for && estimate > threshold(window as usize)
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
        self.chain[self.first()].model()
    }

    fn system(&self) -> &'static str {
        self.chain[self.first()].system()
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChunkStream, ProviderError> {
        let order = self.order();
        // The caller sized the request for the first provider's window.
        let sized_for = self.chain[order[0]].model().context_window;
        let estimate = estimate_request_tokens(&request);
        let mut last = None;
        for (n, i) in order.into_iter().enumerate() {
            if n > 0 && self.too_small(i, sized_for, estimate) {
                tracing::info!(
                    provider = i,
                    model = %self.chain[i].model().name,
                    estimate,
                    "request too large for this fallback's context window; passing it over"
                );
                continue;
            }
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

    fn has_fallbacks(&self) -> bool {
        self.chain.len() > 1
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

    #[tokio::test]
    async fn a_request_too_large_for_a_smaller_fallback_is_not_sent_there() {
        let primary = Scripted::new(
            "claude-sonnet",
            vec![Err(ProviderError::RateLimited { retry_after: None })],
        );
        let backup = Scripted::new("deepseek-chat", vec![Ok("sized anew")]);
        let p = FallbackProvider::new(primary, vec![backup.clone() as Arc<dyn Provider>]);
        assert_eq!(p.model().context_window, 200_000);
        // ~100K tokens: sized for Claude's window, far over DeepSeek's.
        let big = ChatRequest {
            messages: vec![Message::user("word ".repeat(80_000))],
            ..request()
        };
        let e = p.chat_stream(big).await.err();
        assert!(
            matches!(e, Some(ProviderError::RateLimited { .. })),
            "{e:?}"
        );
        assert_eq!(backup.outcomes.lock().unwrap().len(), 1, "not sent");
        // The window in front is now the fallback's: the caller sizes anew.
        assert_eq!(p.model().context_window, 64_000);
        assert_eq!(text(&p).await.unwrap(), "sized anew");
    }
}
