//! Fuzzing entry points (issue 18): each takes arbitrary bytes, runs one of
//! the gateway's parsers or matchers on them, and panics only when an
//! invariant breaks. `fuzz/` runs them under libFuzzer (`cargo +nightly fuzz
//! run <target>`, see the book's Testing chapter); the normal suite runs each
//! on random bytes with a bounded case count (below), and the `*_props.rs`
//! property tests drive the same helpers with structured inputs.
//!
//! Compiled for tests and with the `fuzzing` feature only.

use crate::approvals::rules::{allows, prefix_pattern};
use crate::llm::sse::{chunk_stream, Collect};
use crate::llm::tool_call_text::ToolCallTextFilter;
use crate::llm::{Chunk, TextToolCalls};
use crate::tools::{DeclaredSchema, HttpApiTool, HttpToolDef};
use futures::StreamExt;
use serde_json::{json, Map, Value};
use std::time::Duration;
use switchboard_platform::{chunk_markdown, measure, LengthUnit};

/// The first `n` bytes of `data` as cut points, and the rest.
fn cuts_and_rest(data: &[u8], n: usize) -> (Vec<usize>, &[u8]) {
    let n = n.min(data.len());
    let (head, rest) = data.split_at(n);
    (head.iter().map(|b| usize::from(*b) * 7).collect(), rest)
}

/// The events the SSE reader reads from `body` delivered in pieces cut at
/// `cuts` (byte offsets, taken modulo the body's length).
pub(crate) fn sse_events(body: &[u8], cuts: &[usize]) -> Vec<String> {
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

/// The SSE reader: however the network cuts a body, it reads the same events.
pub fn sse(data: &[u8]) {
    let (cuts, body) = cuts_and_rest(data, 4);
    assert_eq!(
        sse_events(body, &cuts),
        sse_events(body, &[]),
        "{body:?} cut at {cuts:?}"
    );
}

/// `text` through a `<tool_call>` filter in pieces cut at `cuts` (char
/// positions): what it passes on, and how many calls it found.
pub(crate) fn tool_call_filtered(
    mode: TextToolCalls,
    results: Vec<String>,
    text: &str,
    cuts: &[usize],
) -> (String, usize) {
    let Some(mut f) = ToolCallTextFilter::new(mode, results) else {
        return (text.to_owned(), 0);
    };
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.sort_unstable();
    let mut out = String::new();
    let mut from = 0;
    for p in points.into_iter().chain([chars.len()]) {
        let piece: String = chars[from..p.max(from)].iter().collect();
        out.push_str(&f.push(&piece));
        from = p.max(from);
    }
    let (rest, calls) = f.finish(false);
    out.push_str(&rest);
    (out, calls.len())
}

/// The `<tool_call>` text parser: never panics, passes text without a block
/// through byte for byte, and never runs a block that repeats a tool result.
pub fn tool_call_text(data: &[u8]) {
    let (cuts, rest) = cuts_and_rest(data, 3);
    let text = String::from_utf8_lossy(rest);
    let mode = if data.first().is_some_and(|b| b & 1 == 1) {
        TextToolCalls::On
    } else {
        TextToolCalls::Auto
    };
    let (out, calls) = tool_call_filtered(mode, Vec::new(), &text, &cuts);
    if !text.contains("<tool_call") {
        assert_eq!(out, text);
        assert_eq!(calls, 0);
    }
    let (_, quoted) = tool_call_filtered(mode, vec![text.to_string()], &text, &cuts);
    if text.trim_start().starts_with("<tool_call>") && text.contains("</tool_call>") {
        assert_eq!(quoted, 0, "a block repeating a tool result ran: {text:?}");
    }
}

/// `exec_command`'s arguments for `command`.
pub(crate) fn command_args(command: &str) -> String {
    json!({ "command": command }).to_string()
}

/// Whether `text` could chain, substitute, redirect or hide a word: what no
/// command on a prefix rule may hold.
pub(crate) fn dangerous(text: &str) -> bool {
    text.contains([
        ';', '&', '|', '`', '$', '<', '>', '(', ')', '\n', '\r', '\'', '"', '\\', '!',
    ])
}

/// Prefix rules ("always" with a prefix): a rule for an open-ended program
/// never allows a command that chains, substitutes or redirects, and one for
/// git allows its exact command only.
pub fn prefix_rule(data: &[u8]) {
    const OPEN: [&str; 6] = ["ls", "cat", "grep", "tail", "echo", "du"];
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let rest = String::from_utf8_lossy(rest);
    let program = OPEN[usize::from(pick) % OPEN.len()];
    if let Ok(rule) = prefix_pattern("exec_command", &command_args(program), program) {
        let command = format!("{program}{rest}");
        if dangerous(rest.trim_end()) {
            assert!(
                !allows(&rule, &command_args(&command)),
                "{rule} allowed {command:?}"
            );
        }
    }
    let exact = "git status";
    if let Ok(rule) = prefix_pattern("exec_command", &command_args(exact), exact) {
        let longer = format!("{exact}{}", rest.trim_end());
        if longer != exact {
            assert!(
                !allows(&rule, &command_args(&longer)),
                "{rule} allowed {longer:?}"
            );
        }
    }
}

/// An HTTP tool declared as `https://api.example.com/v1/items/{id}/detail`
/// with a string `q` sent in the query.
pub(crate) fn items_tool(method: reqwest::Method) -> HttpApiTool {
    let parameters = DeclaredSchema::parse(json!({"type": "object", "properties": {
        "id": {"type": "string"}, "q": {"type": "string"}}}));
    let Ok(parameters) = parameters else {
        unreachable!("a valid schema")
    };
    HttpApiTool::new(
        HttpToolDef {
            name: "items".into(),
            description: "items".into(),
            method,
            url: "https://api.example.com/v1/items/{id}/detail".into(),
            parameters,
            placeholders: vec!["id".into()],
            auth: None,
            headers: Vec::new(),
            requires_approval: false,
            allow_private: false,
            timeout: Duration::from_secs(5),
        },
        &[],
    )
}

/// The URL an [`items_tool`] builds for `id` and `q`, checked: a path value
/// stays in its own segment (only `.` and `..` are refused), the host and
/// path shape are the declared ones, and a query value adds no parameter.
pub(crate) fn check_items_url(id: &str, q: &str) {
    let args: Map<String, Value> = [("id".to_owned(), json!(id)), ("q".to_owned(), json!(q))]
        .into_iter()
        .collect();
    match items_tool(reqwest::Method::GET).build_for_test(&args) {
        Err(_) => assert!(
            id == "." || id == "..",
            "only dot segments are refused: {id:?}"
        ),
        Ok(url) => {
            assert_eq!(url.host_str(), Some("api.example.com"));
            let segments: Vec<&str> = url
                .path_segments()
                .map(Iterator::collect)
                .unwrap_or_default();
            assert_eq!(segments.len(), 4, "{url}");
            assert_eq!(
                (segments[0], segments[1], segments[3]),
                ("v1", "items", "detail")
            );
            assert!(url.fragment().is_none(), "{url}");
            let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
            assert_eq!(pairs, vec![("q".to_owned(), q.to_owned())]);
        }
    }
}

/// The HTTP tool URL builder on any path and query values.
pub fn http_url(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (id, q) = text.split_once('\u{0}').unwrap_or((&text, ""));
    check_items_url(id, q);
}

/// The Markdown chunker (Telegram's and Discord's messages): every chunk
/// fits the limit in its unit, at any limit, on any text.
pub fn chunk(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let limit = 4 + usize::from(pick) * 2;
    let text = String::from_utf8_lossy(rest);
    for unit in [LengthUnit::Chars, LengthUnit::Utf16] {
        for piece in chunk_markdown(&text, limit, unit) {
            let size = measure(&piece, unit);
            assert!(size <= limit, "{size} > {limit}: {piece:?}");
        }
    }
}

/// A fuzz target: its name in `fuzz/`, and its entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name `fuzz/` gives it.
pub const TARGETS: &[Target] = &[
    ("chunk", chunk),
    ("sse", sse),
    ("tool_call_text", tool_call_text),
    ("prefix_rule", prefix_rule),
    ("http_url", http_url),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_target_takes_any_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
            for (_, target) in TARGETS {
                target(&data);
            }
        }
    }
}
