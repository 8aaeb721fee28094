//! The plumbing the fake model servers (OpenAI-compatible, Anthropic, Gemini)
//! share: their state behind one lock, the scripted replies (the queue, else the
//! responder), the wake-up behind `wait_for_requests`, serving until dropped,
//! and writing a reply's SSE stream (pacing, stall, disconnect) and headers.
//! What each fake accepts, refuses and answers stays in its own module.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::Response;
use axum::Router;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Served;

/// Makes a reply for a valid request when the queue is empty.
pub type Responder<R> = Arc<dyn Fn(&Value) -> R + Send + Sync>;

/// The scripted replies of a fake: each valid request takes the oldest queued
/// one, else asks the responder.
pub struct Script<R> {
    queue: VecDeque<R>,
    responder: Option<Responder<R>>,
}

impl<R> Default for Script<R> {
    fn default() -> Self {
        Script {
            queue: VecDeque::new(),
            responder: None,
        }
    }
}

impl<R> Script<R> {
    pub fn push(&mut self, reply: R) {
        self.queue.push_back(reply);
    }

    pub fn set_responder<F>(&mut self, responder: F)
    where
        F: Fn(&Value) -> R + Send + Sync + 'static,
    {
        self.responder = Some(Arc::new(responder));
    }

    /// Scripted replies not yet taken.
    pub fn remaining(&self) -> usize {
        self.queue.len()
    }
}

/// A fake's state `S` (which holds its [`Script`] and what it recorded) and
/// what its handlers share.
pub struct Shared<S> {
    state: Mutex<S>,
    /// Cancelled when the fake is dropped: stops the server, releases stalled streams.
    pub shutdown: CancellationToken,
    request_seen: Notify,
}

impl<S: Default + Send + 'static> Shared<S> {
    pub fn new() -> Arc<Self> {
        Arc::new(Shared {
            state: Mutex::new(S::default()),
            shutdown: CancellationToken::new(),
            request_seen: Notify::new(),
        })
    }

    /// Serves `router` (with this state) on `addr` until the fake is dropped.
    pub async fn serve(
        self: &Arc<Self>,
        addr: SocketAddr,
        router: Router<Arc<Self>>,
        name: &'static str,
    ) -> std::io::Result<Served> {
        let app = router.with_state(self.clone());
        Served::bind(addr, app, self.shutdown.clone(), name).await
    }

    /// [`Shared::serve`] on an ephemeral loopback port.
    pub async fn serve_loopback(
        self: &Arc<Self>,
        router: Router<Arc<Self>>,
        name: &'static str,
    ) -> Served {
        let app = router.with_state(self.clone());
        Served::loopback(app, self.shutdown.clone(), name).await
    }
}

impl<S> Shared<S> {
    pub fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes [`Shared::wait_for_requests`] after a request was recorded.
    pub fn request_seen(&self) {
        self.request_seen.notify_waiters();
    }

    /// Waits (up to 10 s) until `requests` of the state lists at least `n`
    /// requests; returns them.
    pub async fn wait_for_requests(
        &self,
        n: usize,
        requests: impl Fn(&S) -> Vec<Value>,
    ) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let notified = self.request_seen.notified();
            let requests = requests(&self.lock());
            if requests.len() >= n || tokio::time::Instant::now() >= deadline {
                return requests;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }

    /// The reply for a valid `request`: the oldest queued one, else the
    /// responder's (called without the lock held), else `None`.
    pub fn next_reply<R>(
        &self,
        script: impl FnOnce(&mut S) -> &mut Script<R>,
        request: &Value,
    ) -> Option<R> {
        let (queued, responder) = {
            let mut state = self.lock();
            let script = script(&mut state);
            (script.queue.pop_front(), script.responder.clone())
        };
        queued.or_else(|| responder.map(|respond| respond(request)))
    }
}

/// How a scripted SSE stream ends after its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    Close,
    /// Keep the connection open without sending anything (until the fake drops).
    Stall,
    /// Abort the connection mid-body.
    Disconnect,
}

/// A `text/event-stream` response sending `frames` (each `delay` apart, if
/// any), then ending as `end` says; a stall lasts until `shutdown`.
pub fn sse_response(
    frames: Vec<String>,
    delay: Option<Duration>,
    end: StreamEnd,
    shutdown: CancellationToken,
) -> Response {
    let frames = stream::iter(frames).then(move |frame| async move {
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        Ok::<Bytes, std::io::Error>(Bytes::from(frame))
    });
    let tail: BoxStream<'static, Result<Bytes, std::io::Error>> = match end {
        StreamEnd::Close => stream::empty().boxed(),
        StreamEnd::Stall => stream::once(async move {
            shutdown.cancelled().await;
            Ok(Bytes::new())
        })
        .boxed(),
        StreamEnd::Disconnect => stream::once(async {
            // Give hyper time to flush the frames before the connection is cut.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "fake LLM: scripted disconnect",
            ))
        })
        .boxed(),
    };
    let mut response = Response::new(Body::from_stream(frames.chain(tail)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// Sets a reply's scripted headers on its response (invalid ones are skipped).
pub fn with_headers(mut response: Response, headers: Vec<(String, String)>) -> Response {
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// Splits at char boundaries near a third and two thirds (mid-JSON on purpose).
pub fn split_in_three(text: &str) -> Vec<String> {
    let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let at = |third: usize| {
        cuts.get(cuts.len() * third / 3)
            .copied()
            .unwrap_or(text.len())
    };
    let (a, b) = (at(1), at(2));
    vec![
        text[..a].to_owned(),
        text[a..b].to_owned(),
        text[b..].to_owned(),
    ]
}
