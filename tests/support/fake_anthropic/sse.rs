//! Writing a fake Anthropic stream: SSE frames with optional pacing and a stall,
//! and splitting JSON mid-token the way the real API fragments tool input.

use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::stream::{self, BoxStream, StreamExt};
use tokio_util::sync::CancellationToken;

/// Splits at char boundaries near a third and two thirds (mid-JSON on purpose).
pub(super) fn split_in_three(text: &str) -> Vec<String> {
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

pub(super) fn sse_body(
    frames: Vec<String>,
    delay: Option<Duration>,
    stall: bool,
    shutdown: CancellationToken,
) -> Body {
    let frames = stream::iter(frames).then(move |frame| async move {
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        Ok::<Bytes, std::io::Error>(Bytes::from(frame))
    });
    let tail: BoxStream<'static, Result<Bytes, std::io::Error>> = if stall {
        stream::once(async move {
            shutdown.cancelled().await;
            Ok(Bytes::new())
        })
        .boxed()
    } else {
        stream::empty().boxed()
    };
    Body::from_stream(frames.chain(tail))
}
