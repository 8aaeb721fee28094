//! The agent runtime driven directly (no gateway): the events of spec §2 —
//! `model_start`, `text_delta`, `thinking_delta`, `tool_calls`, `tool_start`,
//! `tool_result`, `tool_error`, `compaction`, `retry`, `usage`, `done` — arrive
//! in the order a channel, the console or a sub-agent relies on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use support::e2e::messages;
use support::fake_llm::{error_body, FakeLlm, Reply};
use switchboard::agent::{
    Agent, AgentConfig, NobodyToAsk, RuntimeEvent, StopReason, TurnOutcome, TurnRequest,
    MAX_CONTEXT_MESSAGES,
};
use switchboard::llm::{
    EndpointConfig, FallbackProvider, Message, ModelInfo, OpenAiProvider, Provider,
};
use switchboard::tools::{Tool, ToolContext, ToolError, ToolRegistry, ToolSpec};
use tokio_util::sync::CancellationToken;

/// `lookup` answers with the stock code it was given; `explode` always fails.
struct TestTool {
    spec: ToolSpec,
}

impl TestTool {
    fn named(name: &str) -> Arc<dyn Tool> {
        Arc::new(TestTool {
            spec: ToolSpec {
                name: name.into(),
                display_name: name.into(),
                description: format!("The {name} test tool."),
                parameters: json!({
                    "type": "object",
                    "properties": {"code": {"type": "string"}},
                    "additionalProperties": false
                }),
                concurrency_safe: true,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
        })
    }
}

#[async_trait]
impl Tool for TestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        match self.spec.name.as_str() {
            "lookup" => Ok(format!("{} closed at 1688.00", args["code"])),
            "hang" => {
                // Never answers; the registry's timeout must end the wait and
                // tell the tool to stop.
                ctx.cancel.cancelled().await;
                Err(ToolError::failed("cancelled"))
            }
            _ => Err(ToolError::failed("the disk is on fire")),
        }
    }
}

/// The real agent with the real OpenAI-compatible provider on the fake model.
struct Rig {
    llm: FakeLlm,
    agent: Arc<Agent>,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn new() -> Rig {
        let llm = FakeLlm::start().await;
        let config = EndpointConfig::new(llm.base_url(), ModelInfo::new("fake-model", None));
        let (agent, dir) = agent_on(Arc::new(OpenAiProvider::new(config).unwrap()));
        Rig {
            llm,
            agent,
            _dir: dir,
        }
    }

    /// Runs one turn of `input` after `history`; every event, `done` last.
    async fn turn(&self, history: Vec<Message>, input: &str) -> Vec<RuntimeEvent> {
        turn(&self.agent, history, input).await
    }
}

/// The real agent with the test tools on `provider`, and its data dir.
fn agent_on(provider: Arc<dyn Provider>) -> (Arc<Agent>, tempfile::TempDir) {
    let mut tools = ToolRegistry::new();
    tools
        .register(TestTool::named("lookup"))
        .register(TestTool::named("explode"))
        .register(TestTool::named("hang"));
    let dir = tempfile::tempdir().unwrap();
    let agent = Arc::new(Agent::new(
        provider,
        Arc::new(tools),
        AgentConfig {
            max_tool_rounds: 15,
            system_prompt: "You are a test assistant.".into(),
            data_dir: dir.path().to_path_buf(),
            model_retries: 2,
            tool_timeout: Duration::from_secs(1),
            intents: switchboard::agent::IntentRules::builtin(),
            turn_deadline: switchboard::caps::DEFAULT_TURN_DEADLINE,
            images: None,
        },
    ));
    (agent, dir)
}

/// Runs one turn of `input` after `history`; every event, `done` last.
async fn turn(agent: &Arc<Agent>, history: Vec<Message>, input: &str) -> Vec<RuntimeEvent> {
    let mut rx = agent.run_turn(TurnRequest {
        session_id: "s1".parse().unwrap(),
        origin: None,
        history,
        input: Message::user(input),
        host: Arc::new(NobodyToAsk),
        cancel: CancellationToken::new(),
        system_context: None,
        model: None,
    });
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    events
}

/// The spec's name of an event.
fn name(event: &RuntimeEvent) -> &'static str {
    match event {
        RuntimeEvent::ModelStart { .. } => "model_start",
        RuntimeEvent::TextDelta(_) => "text_delta",
        RuntimeEvent::ThinkingDelta(_) => "thinking_delta",
        RuntimeEvent::ToolCalls(_) => "tool_calls",
        RuntimeEvent::ToolStart { .. } => "tool_start",
        RuntimeEvent::ToolProgress { .. } => "tool_progress",
        RuntimeEvent::ToolResult { .. } => "tool_result",
        RuntimeEvent::ToolError { .. } => "tool_error",
        RuntimeEvent::Compaction { .. } => "compaction",
        RuntimeEvent::Retry { .. } => "retry",
        RuntimeEvent::Usage(_) => "usage",
        RuntimeEvent::Done(_) => "done",
    }
}

/// The event names in order, a run of deltas shown once as `text_delta…`.
fn sequence(events: &[RuntimeEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for event in events {
        let n = name(event);
        let shown = match n {
            "text_delta" | "thinking_delta" => format!("{n}…"),
            _ => n.to_owned(),
        };
        if shown.ends_with('…') && out.last() == Some(&shown) {
            continue;
        }
        out.push(shown);
    }
    out
}

fn text_of(events: &[RuntimeEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn outcome(events: &[RuntimeEvent]) -> &TurnOutcome {
    match events.last() {
        Some(RuntimeEvent::Done(outcome)) => outcome,
        other => panic!("the last event is not done: {other:?}"),
    }
}

#[tokio::test]
async fn a_plain_answer_streams_text_then_usage_then_done() {
    let rig = Rig::new().await;
    rig.llm
        .push(Reply::text("Hello there, world.").with_usage(12, 3, 0));
    let events = rig.turn(Vec::new(), "hi").await;
    assert_eq!(
        sequence(&events),
        ["model_start", "text_delta…", "usage", "done"]
    );
    assert!(matches!(events[0], RuntimeEvent::ModelStart { round: 1 }));
    let deltas = events
        .iter()
        .filter(|e| matches!(e, RuntimeEvent::TextDelta(_)))
        .count();
    assert_eq!(deltas, 3, "one delta per streamed piece: {events:?}");
    assert_eq!(text_of(&events), "Hello there, world.");
    let done = outcome(&events);
    assert_eq!(done.stop, StopReason::Answered);
    assert_eq!(done.text, "Hello there, world.");
    assert_eq!((done.usage.input_tokens, done.usage.output_tokens), (12, 3));
}

#[tokio::test]
async fn a_tool_round_announces_starts_and_results_before_the_next_model_call() {
    let rig = Rig::new().await;
    rig.llm.push(Reply::text_then_tool_calls(
        "Let me check.",
        [
            ("c1", "lookup", json!({"code": "600519"})),
            ("c2", "lookup", json!({"code": "000001"})),
        ],
    ));
    rig.llm.push(Reply::text("Both closed higher."));
    let events = rig.turn(Vec::new(), "how did my stocks do?").await;
    let seq = sequence(&events);
    assert_eq!(
        seq[..4],
        ["model_start", "text_delta…", "usage", "tool_calls"],
        "{seq:?}"
    );
    // Two concurrency-safe calls run in parallel: both start, both finish
    // (in either order), then the model is called again.
    let mut round: Vec<&str> = seq[4..8].iter().map(String::as_str).collect();
    round.sort_unstable();
    assert_eq!(
        round,
        ["tool_result", "tool_result", "tool_start", "tool_start"]
    );
    assert_eq!(
        seq[8..],
        ["model_start", "text_delta…", "usage", "done"],
        "{seq:?}"
    );
    let RuntimeEvent::ToolCalls(calls) = &events
        .iter()
        .find(|e| matches!(e, RuntimeEvent::ToolCalls(_)))
        .unwrap()
    else {
        unreachable!()
    };
    let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
    let results: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ToolResult {
                call_id, preview, ..
            } => Some((call_id.as_str(), preview.as_str())),
            _ => None,
        })
        .collect();
    assert!(
        results.contains(&("c1", "\"600519\" closed at 1688.00")),
        "{results:?}"
    );
    assert!(matches!(
        events
            .iter()
            .rev()
            .find(|e| matches!(e, RuntimeEvent::ModelStart { .. })),
        Some(RuntimeEvent::ModelStart { round: 2 })
    ));
    let done = outcome(&events);
    assert_eq!(done.stop, StopReason::Answered);
    assert_eq!(done.rounds, 2);
    assert_eq!(done.text, "Let me check.\n\nBoth closed higher.");
}

#[tokio::test]
async fn a_hanging_tool_times_out_as_a_tool_error_and_the_turn_goes_on() {
    let rig = Rig::new().await;
    rig.llm.push(Reply::tool_calls([("c1", "hang", json!({}))]));
    rig.llm.push(Reply::text("That took too long."));
    let events = rig.turn(Vec::new(), "do the slow thing").await;
    let error = events
        .iter()
        .find_map(|e| match e {
            RuntimeEvent::ToolError { error, .. } => Some(error.clone()),
            _ => None,
        })
        .expect("a tool_error event");
    assert!(error.contains("timed out"), "{error}");
    assert_eq!(outcome(&events).text, "That took too long.");
    let requests = rig.llm.requests().await;
    let seen = requests[1].to_string();
    assert!(
        seen.contains("timed out after 1s"),
        "the model is told: {seen}"
    );
}

#[tokio::test]
async fn a_failing_tool_is_a_tool_error_the_model_sees() {
    let rig = Rig::new().await;
    rig.llm
        .push(Reply::tool_calls([("c1", "explode", json!({}))]));
    rig.llm
        .push(Reply::tool_calls([("c2", "no_such_tool", json!({}))]));
    rig.llm.push(Reply::text("Sorry, that failed."));
    let events = rig.turn(Vec::new(), "do the risky thing").await;
    assert_eq!(
        sequence(&events),
        [
            "model_start",
            "usage",
            "tool_calls",
            "tool_start",
            "tool_error",
            "model_start",
            "usage",
            "tool_calls",
            // A call to an unknown tool fails before it could start.
            "tool_error",
            "model_start",
            "text_delta…",
            "usage",
            "done"
        ]
    );
    let errors: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ToolError { call_id, error, .. } => {
                Some((call_id.as_str(), error.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(errors[0], ("c1", "error: the disk is on fire"));
    assert_eq!(errors[1].0, "c2");
    assert!(errors[1].1.contains("unknown tool"), "{errors:?}");
    // The error went back to the model as an observation; the turn answered.
    let requests = rig.llm.requests().await;
    let observation = messages(&requests[1])
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .map(|m| m["content"].clone());
    assert_eq!(observation, Some(json!("error: the disk is on fire")));
    assert_eq!(outcome(&events).stop, StopReason::Answered);
}

#[tokio::test]
async fn reasoning_streams_as_thinking_deltas_before_the_text() {
    let rig = Rig::new().await;
    rig.llm
        .push(Reply::reasoning("Two plus two is four.", "It is 4."));
    let events = rig.turn(Vec::new(), "2+2?").await;
    assert_eq!(
        sequence(&events),
        [
            "model_start",
            "thinking_delta…",
            "text_delta…",
            "usage",
            "done"
        ]
    );
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Two plus two is four.");
    assert_eq!(
        outcome(&events).text,
        "It is 4.",
        "thinking is not answer text"
    );
}

#[tokio::test]
async fn a_host_that_refuses_reasoning_content_still_gets_the_tool_round() {
    let rig = Rig::new().await;
    // Groq and Cerebras refuse the property DeepSeek requires.
    rig.llm.reject_message_fields(&["reasoning_content"]);
    rig.llm.push(Reply::reasoning_then_tool_calls(
        "I should look it up.",
        [("c1", "lookup", json!({"code": "600519"}))],
    ));
    rig.llm.push(Reply::text("It closed at 1688."));
    let events = rig.turn(Vec::new(), "how did 600519 do?").await;
    let done = outcome(&events);
    assert_eq!(
        (done.stop.clone(), done.text.as_str()),
        (StopReason::Answered, "It closed at 1688."),
        "{events:?}"
    );
    let requests = rig.llm.requests().await;
    assert_eq!(requests.len(), 3, "refused once, then sent without it");
    assert_eq!(
        messages(&requests[1])[2]["reasoning_content"],
        "I should look it up."
    );
    assert!(!requests[2].to_string().contains("reasoning_content"));
    assert!(tool_of(&requests[2], "c1").contains("1688.00"));

    // The endpoint's refusal is remembered: the next round goes without it at once.
    rig.llm.push(Reply::reasoning_then_tool_calls(
        "Again.",
        [("c2", "lookup", json!({"code": "000001"}))],
    ));
    rig.llm.push(Reply::text("Done."));
    let events = rig.turn(Vec::new(), "and 000001?").await;
    assert_eq!(outcome(&events).text, "Done.");
    let requests = rig.llm.requests().await;
    assert_eq!(requests.len(), 5);
    assert!(!requests[4].to_string().contains("reasoning_content"));
}

/// The content of the tool message answering `call_id`.
fn tool_of(request: &Value, call_id: &str) -> String {
    messages(request)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[tokio::test]
async fn a_transient_server_error_is_retried_with_a_retry_event() {
    let rig = Rig::new().await;
    rig.llm.push(Reply::status(
        500,
        error_body("The server is overloaded", "server_error", None),
    ));
    rig.llm.push(Reply::text("Back again."));
    let events = rig.turn(Vec::new(), "hello?").await;
    assert_eq!(
        sequence(&events),
        ["model_start", "retry", "text_delta…", "usage", "done"]
    );
    let Some(RuntimeEvent::Retry { attempt, reason }) = events
        .iter()
        .find(|e| matches!(e, RuntimeEvent::Retry { .. }))
    else {
        unreachable!()
    };
    assert_eq!(*attempt, 1);
    assert!(reason.contains("500"), "{reason}");
    assert_eq!(rig.llm.requests().await.len(), 2);
    let done = outcome(&events);
    assert_eq!(
        (done.stop.clone(), done.text.as_str()),
        (StopReason::Answered, "Back again.")
    );
}

#[tokio::test]
async fn a_long_conversation_is_compacted_before_the_model_streams() {
    let rig = Rig::new().await;
    rig.llm.set_responder(|request| {
        let system = messages(request)[0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if system.starts_with("You compress") {
            Reply::text(r#"{"summary": "The user and the assistant chatted about numbers."}"#)
        } else {
            Reply::text("Continuing.")
        }
    });
    let history: Vec<Message> = (0..MAX_CONTEXT_MESSAGES)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("number {i}"))
            } else {
                Message::assistant(format!("noted {i}"))
            }
        })
        .collect();
    let events = rig.turn(history, "and now?").await;
    assert_eq!(
        sequence(&events),
        ["model_start", "compaction", "text_delta…", "usage", "done"]
    );
    let Some(RuntimeEvent::Compaction {
        messages_before,
        messages_after,
        tokens_before,
        tokens_after,
    }) = events
        .iter()
        .find(|e| matches!(e, RuntimeEvent::Compaction { .. }))
    else {
        unreachable!()
    };
    assert!(
        tokens_after < tokens_before,
        "{tokens_after} < {tokens_before}"
    );
    assert!(
        messages_after < messages_before,
        "{messages_after} < {messages_before}"
    );
    assert!(outcome(&events).compaction.is_some());
}

/// A fallback chain of two fake endpoints, the primary's window first.
fn chain(
    primary: &FakeLlm,
    primary_window: u32,
    fallback: &FakeLlm,
    fallback_window: u32,
    idle: Duration,
) -> Arc<dyn Provider> {
    let endpoint = |llm: &FakeLlm, name: &str, window| {
        let config = EndpointConfig::new(llm.base_url(), ModelInfo::new(name, Some(window)))
            .with_idle_timeout(idle);
        Arc::new(OpenAiProvider::new(config).unwrap()) as Arc<dyn Provider>
    };
    Arc::new(FallbackProvider::new(
        endpoint(primary, "big-model", primary_window),
        vec![endpoint(fallback, "small-model", fallback_window)],
    ))
}

#[tokio::test]
async fn a_fallback_with_a_smaller_window_gets_a_request_that_fits_it() {
    let (primary, fallback) = (FakeLlm::start().await, FakeLlm::start().await);
    primary.push(Reply::status(
        429,
        error_body(
            "Rate limit reached",
            "requests",
            Some("rate_limit_exceeded"),
        ),
    ));
    fallback.set_context_window(16_000);
    fallback.set_responder(|request| {
        let system = messages(request)[0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if system.starts_with("You compress") {
            Reply::text(r#"{"summary": "The user and the assistant went through the notes."}"#)
        } else {
            Reply::text("Answered by the fallback.")
        }
    });
    let provider = chain(&primary, 40_000, &fallback, 16_000, Duration::from_secs(10));
    let (agent, _dir) = agent_on(provider);
    // About 20K tokens: well within the primary's window (no compaction for
    // it), beyond the fallback's.
    let history: Vec<Message> = (0..24)
        .map(|i| {
            let text = format!("note {i}: {}", "word ".repeat(640));
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect();
    let events = turn(&agent, history, "and the last note?").await;
    let done = outcome(&events);
    assert_eq!(
        (done.stop.clone(), done.text.as_str()),
        (StopReason::Answered, "Answered by the fallback."),
        "{:?}",
        fallback
            .requests()
            .await
            .last()
            .map(support::fake_llm::prompt_tokens)
    );
    assert_eq!(primary.requests().await.len(), 1);
    let seq = sequence(&events);
    assert!(
        seq.starts_with(&["model_start".into(), "retry".into(), "compaction".into()]),
        "compacted for the fallback: {seq:?}"
    );
    let sent = fallback.requests().await;
    assert!(!sent.is_empty());
    for request in &sent {
        assert!(support::fake_llm::prompt_tokens(request) <= 16_000);
    }
}

#[tokio::test]
async fn a_primary_that_stalls_after_its_headers_is_retried_on_the_fallback() {
    let (primary, fallback) = (FakeLlm::start().await, FakeLlm::start().await);
    // Headers, then silence past the idle timeout.
    primary.push(Reply::chunks(Vec::new()).then_stall());
    fallback.push(Reply::text("From the fallback."));
    let provider = chain(
        &primary,
        64_000,
        &fallback,
        64_000,
        Duration::from_millis(300),
    );
    let (agent, _dir) = agent_on(provider);
    let events = turn(&agent, Vec::new(), "hello?").await;
    assert_eq!(
        sequence(&events),
        ["model_start", "retry", "text_delta…", "usage", "done"]
    );
    let Some(RuntimeEvent::Retry { reason, .. }) = events
        .iter()
        .find(|e| matches!(e, RuntimeEvent::Retry { .. }))
    else {
        unreachable!()
    };
    assert!(reason.contains("sent nothing"), "{reason}");
    assert_eq!(outcome(&events).text, "From the fallback.");
    assert_eq!(
        (
            primary.requests().await.len(),
            fallback.requests().await.len()
        ),
        (1, 1)
    );
}

#[tokio::test]
async fn a_single_endpoint_that_stalls_is_not_retried() {
    let rig = Rig::new().await;
    let llm = &rig.llm;
    llm.push(Reply::chunks(Vec::new()).then_stall());
    let config = EndpointConfig::new(llm.base_url(), ModelInfo::new("fake-model", None))
        .with_idle_timeout(Duration::from_millis(300));
    let (agent, _dir) = agent_on(Arc::new(OpenAiProvider::new(config).unwrap()));
    let events = turn(&agent, Vec::new(), "hello?").await;
    assert_eq!(sequence(&events), ["model_start", "done"]);
    assert_eq!(outcome(&events).stop, StopReason::ModelError);
    assert_eq!(llm.requests().await.len(), 1);
}
