//! `OTEL_EXPORTER_OTLP_ENDPOINT`: the real `switchboard chat` exports one
//! trace per turn to a fake collector on 127.0.0.1 — model calls with their
//! tokens, the tool call, the platform sends — and never the user's words,
//! the tool's arguments or the model key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::console;
use crate::support;

use console::piped::Env;
use serde_json::json;
use support::fake_llm::{FakeLlm, Reply};
use support::fake_otlp::{attribute_texts, int, text, FakeCollector};

const API_KEY: &str = "sk-otel-probe-4c8e1a7b9d2f";
const USER_WORDS: &str = "zebra-marker-7731";
const FILE: &str = "ledger-otel-5521.txt";

#[tokio::test]
async fn a_turn_is_one_trace_of_model_tool_and_send_spans_without_secrets() {
    let collector = FakeCollector::start().await;
    let llm = FakeLlm::start().await;
    llm.require_api_key(API_KEY);
    llm.push(
        Reply::tool_calls([("call_otel_1", "read_file", json!({ "path": FILE }))])
            .with_usage(111, 22, 0),
    );
    llm.push(Reply::text("The ledger says: all paid.").with_usage(333, 44, 0));
    let mut env = Env::new(&llm.base_url());
    std::fs::create_dir_all(env.workspace()).unwrap();
    std::fs::write(env.workspace().join(FILE), "all paid\n").unwrap();
    for (k, v) in [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_SERVICE_NAME", "switchboard-test".to_owned()),
        ("LLM_API_KEY", API_KEY.to_owned()),
    ] {
        env.vars.push((k.to_owned(), v));
    }

    let done = env
        .chat(&format!("what does {FILE} say? {USER_WORDS}\n"))
        .await;

    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(done.stdout.contains("all paid."), "{done}");
    // Flushed at the end: everything is there once the process has exited.
    let spans = collector.spans();
    assert!(
        spans
            .iter()
            .all(|(service, _)| service == "switchboard-test"),
        "service.name"
    );
    let named = |prefix: &str| -> Vec<_> {
        spans
            .iter()
            .map(|(_, s)| s)
            .filter(|s| s.name.starts_with(prefix))
            .collect()
    };
    let turns = named("turn");
    assert_eq!(turns.len(), 1, "one turn span: {spans:#?}");
    let turn = turns[0];
    assert_eq!(
        text(&turn.attributes, "platform").as_deref(),
        Some("console")
    );
    assert_eq!(
        text(&turn.attributes, "session.id").map(|s| s.len()),
        Some(12)
    );
    assert!(turn.parent_span_id.is_empty(), "the turn is the root");

    let chats = named("chat ");
    assert_eq!(chats.len(), 2, "two model calls: {chats:#?}");
    let mut tokens = Vec::new();
    for chat in &chats {
        assert_eq!(chat.name, "chat fake-model");
        assert_eq!(chat.trace_id, turn.trace_id, "same trace");
        assert_eq!(chat.parent_span_id, turn.span_id, "a child of the turn");
        let a = &chat.attributes;
        assert_eq!(text(a, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(text(a, "gen_ai.system").as_deref(), Some("openai"));
        assert_eq!(
            text(a, "gen_ai.request.model").as_deref(),
            Some("fake-model")
        );
        assert_eq!(
            text(a, "gen_ai.response.model").as_deref(),
            Some("fake-model")
        );
        tokens.push((
            int(a, "gen_ai.usage.input_tokens").unwrap(),
            int(a, "gen_ai.usage.output_tokens").unwrap(),
        ));
    }
    tokens.sort_unstable();
    assert_eq!(tokens, [(111, 22), (333, 44)]);

    let tools = named("execute_tool");
    assert_eq!(tools.len(), 1, "{tools:#?}");
    let tool = tools[0];
    assert_eq!(tool.name, "execute_tool read_file");
    assert_eq!(tool.trace_id, turn.trace_id);
    assert_eq!(tool.parent_span_id, turn.span_id);
    let a = &tool.attributes;
    assert_eq!(text(a, "gen_ai.tool.name").as_deref(), Some("read_file"));
    assert_eq!(
        text(a, "gen_ai.tool.call.id").as_deref(),
        Some("call_otel_1")
    );
    assert_eq!(text(a, "tool.outcome").as_deref(), Some("ok"));

    let sends: Vec<_> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| matches!(s.name.as_str(), "send" | "edit"))
        .filter(|s| s.trace_id == turn.trace_id)
        .collect();
    assert!(!sends.is_empty(), "the answer's platform calls: {spans:#?}");
    assert!(sends
        .iter()
        .all(|s| { text(&s.attributes, "messaging.system").as_deref() == Some("console") }));

    // Nothing of what was said, read or keyed leaves the process.
    let raw = collector.raw_text();
    for secret in [USER_WORDS, FILE, API_KEY, "all paid", "what does"] {
        assert!(!raw.contains(secret), "{secret:?} was exported");
        for (_, span) in &spans {
            assert!(
                attribute_texts(span).iter().all(|v| !v.contains(secret)),
                "{secret:?} in {span:#?}"
            );
        }
    }
}

/// The traces-only endpoint is used as given and wins over the base URL;
/// a sampler that exports nothing leaves the turn alone and sends nothing.
#[tokio::test]
async fn the_traces_endpoint_wins_and_the_sampler_decides() {
    let collector = FakeCollector::start().await;
    let llm = FakeLlm::start().await;
    let run = |vars: Vec<(&'static str, String)>| {
        let mut env = Env::new(&llm.base_url());
        for (k, v) in vars {
            env.vars.push((k.to_owned(), v));
        }
        async move { env.chat("hello\n").await }
    };

    llm.push(Reply::text("Hi there."));
    let done = run(vec![
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{}/v1/traces", collector.endpoint()),
        ),
        // Nobody listens here: used, it would lose every span.
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:9".to_owned(),
        ),
    ])
    .await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    let turns = |c: &FakeCollector| c.spans().iter().filter(|(_, s)| s.name == "turn").count();
    assert_eq!(turns(&collector), 1, "exported to the traces URL as given");

    llm.push(Reply::text("Hi again."));
    let exports = collector.exports().len();
    let done = run(vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_TRACES_SAMPLER", "always_off".to_owned()),
    ])
    .await;
    assert_eq!(done.status.code(), Some(0), "{done}");
    assert!(done.stdout.contains("Hi again."), "{done}");
    assert_eq!(
        collector.exports().len(),
        exports,
        "nothing sampled, nothing sent"
    );

    let done = run(vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_owned()),
    ])
    .await;
    assert_ne!(done.status.code(), Some(0), "{done}");
    assert!(
        done.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
        "{done}"
    );
}
