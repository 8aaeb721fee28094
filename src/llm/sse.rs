//! Reading a streamed model response: SSE events off the body with a size cap
//! and an idle timeout, decoded by the provider's [`SseDecoder`] into chunks,
//! with the key scrubbed out of any error.

use std::collections::VecDeque;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::stream::BoxStream;
use futures::StreamExt;
use switchboard_platform::Secret;

use super::error::ProviderError;
use super::openai::error as openai_error;
use super::types::Chunk;
use super::ChunkStream;

/// Largest response body accepted (tool arguments can be big, but not unbounded).
const MAX_STREAM_BYTES: usize = 32 * 1024 * 1024;

/// Whether the stream goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Continue,
    /// The answer is complete (`[DONE]`, `message_stop`).
    Done,
}

/// The protocol-specific part: SSE `data` payloads in, chunks out.
pub(crate) trait SseDecoder: Send + 'static {
    /// Handles the `data` of one event. After [`Step::Done`] nothing else is read.
    fn on_data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<Step, ProviderError>;

    /// The body ended before [`Step::Done`]: flush what is held back, or say
    /// why the answer is incomplete.
    fn on_end(&mut self, out: &mut Vec<Chunk>) -> Result<(), ProviderError>;
}

/// Turns a successful streaming response into a [`ChunkStream`]; a silence
/// longer than `idle` ends it with [`ProviderError::Timeout`].
pub(crate) fn chunk_stream<D: SseDecoder>(
    response: reqwest::Response,
    idle: Duration,
    key: Option<Secret>,
    decoder: D,
) -> ChunkStream {
    let mut received = 0usize;
    let bytes = response.bytes_stream().map(move |item| match item {
        Ok(bytes) => {
            received += bytes.len();
            if received > MAX_STREAM_BYTES {
                Err(BodyError::TooLarge)
            } else {
                Ok(bytes)
            }
        }
        Err(error) => Err(BodyError::Transport(error)),
    });
    // Some proxies end the body without the blank line that ends the last
    // event, which the parser would then discard as incomplete. An extra
    // blank line after a complete event dispatches nothing.
    let bytes = bytes.chain(futures::stream::once(async {
        Ok(From::from(b"\n\n".as_slice()))
    }));
    let state = State {
        events: bytes.eventsource().boxed(),
        decoder,
        queue: VecDeque::new(),
        finished: false,
        idle,
        key,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.queue.pop_front() {
                return Some((item, state));
            }
            if state.finished {
                return None;
            }
            state.advance().await;
        }
    })
    .boxed()
}

#[derive(Debug)]
enum BodyError {
    Transport(reqwest::Error),
    TooLarge,
}

type Events = BoxStream<'static, Result<eventsource_stream::Event, EventStreamError<BodyError>>>;

struct State<D> {
    events: Events,
    decoder: D,
    queue: VecDeque<Result<Chunk, ProviderError>>,
    finished: bool,
    idle: Duration,
    key: Option<Secret>,
}

impl<D: SseDecoder> State<D> {
    /// Reads one SSE event (or the end, or the idle timeout) into the queue.
    async fn advance(&mut self) {
        let mut out = Vec::new();
        let result = match tokio::time::timeout(self.idle, self.events.next()).await {
            Err(_) => Err(ProviderError::Timeout(self.idle)),
            Ok(None) => self.decoder.on_end(&mut out).map(|()| Step::Done),
            Ok(Some(Err(error))) => Err(event_error(error)),
            Ok(Some(Ok(event))) => self.decoder.on_data(&event.data, &mut out),
        };
        self.queue.extend(out.into_iter().map(Ok));
        match result {
            Ok(Step::Continue) => {}
            Ok(Step::Done) => self.finished = true,
            Err(error) => {
                let error = openai_error::scrub(error, self.key.as_ref());
                tracing::debug!(%error, "model stream failed");
                self.queue.push_back(Err(error));
                self.finished = true;
            }
        }
    }
}

fn event_error(error: EventStreamError<BodyError>) -> ProviderError {
    match error {
        EventStreamError::Transport(BodyError::Transport(error)) => {
            openai_error::from_reqwest(&error)
        }
        EventStreamError::Transport(BodyError::TooLarge) => ProviderError::InvalidResponse(
            format!("the response exceeded {MAX_STREAM_BYTES} bytes"),
        ),
        EventStreamError::Utf8(error) => {
            ProviderError::InvalidResponse(format!("the stream is not UTF-8: {error}"))
        }
        EventStreamError::Parser(error) => {
            ProviderError::InvalidResponse(format!("the stream is not SSE: {error}"))
        }
    }
}

/// Every event's data as a text chunk (for the tests and the fuzz target).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) struct Collect;

#[cfg(any(test, feature = "fuzzing"))]
impl SseDecoder for Collect {
    fn on_data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<Step, ProviderError> {
        out.push(Chunk::Text(data.to_owned()));
        Ok(Step::Continue)
    }

    fn on_end(&mut self, _: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn events(body: &'static str) -> Vec<String> {
        let response = reqwest::Response::from(axum::http::Response::new(body));
        let chunks: Vec<_> = chunk_stream(response, Duration::from_secs(5), None, Collect)
            .collect()
            .await;
        chunks
            .into_iter()
            .map(|c| match c {
                Ok(Chunk::Text(t)) => t,
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_last_event_without_its_blank_line_is_still_read() {
        assert_eq!(
            events("data: one\n\ndata: two").await,
            ["one", "two"],
            "body ends mid-line"
        );
        assert_eq!(
            events("data: one\r\n\r\ndata: two\r\n").await,
            ["one", "two"]
        );
        assert_eq!(
            events("data: one\n\ndata: two\n\n").await,
            ["one", "two"],
            "a terminated stream gains no empty event"
        );
    }
}
