//! Property test of the SSE reader (issue 18's fuzzing target): however the
//! network cuts a stream — inside a line, inside a `\r\n`, inside a multi-byte
//! character — the events read are the same as from the whole body.

use super::sse::{chunk_stream, SseDecoder, Step};
use super::{Chunk, ProviderError};
use futures::StreamExt;
use proptest::prelude::*;
use std::time::Duration;

/// Every event's data as a text chunk.
struct Collect;

impl SseDecoder for Collect {
    fn on_data(&mut self, data: &str, out: &mut Vec<Chunk>) -> Result<Step, ProviderError> {
        out.push(Chunk::Text(data.to_owned()));
        Ok(Step::Continue)
    }

    fn on_end(&mut self, _: &mut Vec<Chunk>) -> Result<(), ProviderError> {
        Ok(())
    }
}

/// The events read from `body` delivered in pieces cut at `cuts` (byte offsets).
fn read(body: &[u8], cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    points.push(body.len());
    points.sort_unstable();
    let mut pieces = Vec::new();
    let mut from = 0;
    for p in points {
        pieces.push(Ok::<_, std::io::Error>(body[from..p].to_vec()));
        from = p;
    }
    let body = reqwest::Body::wrap_stream(futures::stream::iter(pieces));
    let response = reqwest::Response::from(axum::http::Response::new(body));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build();
    let Ok(runtime) = runtime else {
        return Vec::new();
    };
    runtime.block_on(async {
        chunk_stream(response, Duration::from_secs(5), None, Collect)
            .map(|c| match c {
                Ok(Chunk::Text(t)) => t,
                other => format!("{other:?}"),
            })
            .collect()
            .await
    })
}

fn event() -> impl Strategy<Value = String> {
    let data = "[a-zé中😀 {}\":,]{0,20}";
    prop_oneof![
        data.prop_map(|d| format!("data: {d}\n\n")),
        data.prop_map(|d| format!("data: {d}\r\n\r\n")),
        (data, data).prop_map(|(a, b)| format!("data: {a}\ndata: {b}\n\n")),
        Just(": keep-alive\n\n".to_owned()),
        data.prop_map(|d| format!("event: delta\ndata: {d}\n\n")),
    ]
}

proptest! {
    #[test]
    fn cuts_anywhere_read_the_same_events(
        events in prop::collection::vec(event(), 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
    ) {
        let body = events.concat().into_bytes();
        prop_assert_eq!(read(&body, &cuts), read(&body, &[]));
    }
}
