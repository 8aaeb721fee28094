//! The OpenAI-compatible provider against the fake LLM server: streaming, tool-call
//! assembly, reasoning, usage, parameter rejection, error classification, timeouts.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use switchboard::llm::{
    ChatRequest, Chunk, EndpointConfig, Message, ModelInfo, OpenAiProvider, ProviderError,
    TextToolCalls, ToolCall, ToolDefinition, Usage,
};
use switchboard_platform::Secret;

use support::fake_llm::{chunk, error_body, FakeLlm, Reply};
use support::provider::{calls, run, text, thinking};

const IDLE: Duration = Duration::from_millis(300);

fn config(llm: &FakeLlm) -> EndpointConfig {
    EndpointConfig::new(llm.base_url(), ModelInfo::new("fake-model", None)).with_idle_timeout(IDLE)
}

fn provider(llm: &FakeLlm) -> anyhow::Result<OpenAiProvider> {
    Ok(OpenAiProvider::new(config(llm))?)
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

fn ask(text: &str, tools: Vec<ToolDefinition>) -> ChatRequest {
    ChatRequest {
        system: "You are terse.".into(),
        messages: vec![Message::user(text)],
        tools,
    }
}

fn usage(chunks: &[Chunk]) -> Option<Usage> {
    chunks.iter().find_map(|c| match c {
        Chunk::Usage(u) => Some(*u),
        _ => None,
    })
}

#[tokio::test]
async fn streams_plain_text_with_usage() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("Hello streaming world"));
    let (chunks, error) = run(&provider(&llm)?, ask("hi", vec![])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), "Hello streaming world");
    assert!(
        chunks
            .iter()
            .filter(|c| matches!(c, Chunk::Text(_)))
            .count()
            > 1
    );
    assert!(usage(&chunks).is_some_and(|u| u.input_tokens > 0 && u.output_tokens > 0));

    let requests = llm.requests().await;
    let body = &requests[0];
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert_eq!(llm.authorizations(), vec![None]);
    Ok(())
}

#[tokio::test]
async fn parallel_tool_calls_split_mid_json_and_the_next_round() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text_then_tool_calls(
        "Checking.",
        [
            ("call_1", "read_file", json!({"path": "a.txt"})),
            ("call_2", "list_dir", json!({"dir": ".", "depth": 2})),
        ],
    ));
    llm.push(Reply::text("Both done."));
    let provider = provider(&llm)?;
    let tools = vec![tool("read_file"), tool("list_dir")];

    let (chunks, error) = run(&provider, ask("look", tools.clone())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), "Checking.");
    let got = calls(&chunks);
    assert_eq!(got.len(), 2);
    assert_eq!(
        (got[0].id.as_str(), got[0].name.as_str()),
        ("call_1", "read_file")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&got[0].arguments)?,
        json!({"path": "a.txt"})
    );
    assert_eq!(
        (got[1].id.as_str(), got[1].name.as_str()),
        ("call_2", "list_dir")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&got[1].arguments)?,
        json!({"dir": ".", "depth": 2})
    );

    // The strict fake accepts the follow-up only if the tool round is well formed.
    let mut assistant = Message::assistant("Checking.");
    assistant.tool_calls = got;
    let mut next = ask("look", tools);
    next.messages.extend([
        assistant,
        Message::tool_result("call_1", "contents"),
        Message::tool_result("call_2", "a.txt"),
    ]);
    let (chunks, error) = run(&provider, next).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), "Both done.");

    let requests = llm.requests().await;
    assert_eq!(requests[0]["tool_choice"], "auto");
    assert_eq!(requests[0]["tools"][1]["function"]["name"], "list_dir");
    let sent = &requests[1]["messages"][2];
    assert_eq!(sent["tool_calls"][1]["id"], "call_2");
    assert_eq!(sent["tool_calls"][1]["type"], "function");
    assert_eq!(requests[1]["messages"][4]["tool_call_id"], "call_2");
    Ok(())
}

#[tokio::test]
async fn reasoning_is_streamed_and_sent_back() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::reasoning("Let me think about it.", "42"));
    llm.push(Reply::text("Yes."));
    let provider = provider(&llm)?;

    let (chunks, error) = run(&provider, ask("answer?", vec![])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(thinking(&chunks), "Let me think about it.");
    assert_eq!(text(&chunks), "42");

    // Within the turn (a tool round follows) the reasoning goes back…
    let mut assistant = Message::assistant("");
    assistant.reasoning = Some(thinking(&chunks));
    assistant.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a"}"#.into(),
    }];
    let mut next = ask("answer?", vec![]);
    next.messages
        .extend([assistant.clone(), Message::tool_result("call_1", "alpha")]);
    let (_, error) = run(&provider, next).await;
    assert!(error.is_none(), "{error:?}");
    // …but once the user has spoken again, that turn's reasoning stays out.
    llm.push(Reply::text("Sure."));
    let mut later = ask("answer?", vec![]);
    later.messages.extend([
        assistant,
        Message::tool_result("call_1", "alpha"),
        Message::assistant("42"),
        Message::user("sure?"),
    ]);
    let (_, error) = run(&provider, later).await;
    assert!(error.is_none(), "{error:?}");
    let requests = llm.requests().await;
    assert_eq!(
        requests[1]["messages"][2]["reasoning_content"],
        "Let me think about it."
    );
    assert!(
        requests[2]["messages"][2]
            .get("reasoning_content")
            .is_none(),
        "{}",
        requests[2]["messages"][2]
    );
    Ok(())
}

#[tokio::test]
async fn usage_reports_cached_tokens() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("ok").with_usage(1200, 7, 1024));
    let (chunks, error) = run(&provider(&llm)?, ask("hi", vec![])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        usage(&chunks),
        Some(Usage {
            input_tokens: 1200,
            output_tokens: 7,
            cache_read_tokens: 1024,
            cache_write_tokens: 0,
        })
    );
    Ok(())
}

#[tokio::test]
async fn rejected_stream_options_is_dropped_and_remembered() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.reject_params(&["stream_options"]);
    llm.push(Reply::text("first"));
    llm.push(Reply::text("second"));
    let provider = provider(&llm)?;

    let (chunks, error) = run(&provider, ask("hi", vec![])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), "first");
    let (chunks, error) = run(&provider, ask("again", vec![])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), "second");

    let requests = llm.requests().await;
    let with_options: Vec<bool> = requests
        .iter()
        .map(|r| r.get("stream_options").is_some())
        .collect();
    assert_eq!(with_options, vec![true, false, false]);
    Ok(())
}

#[tokio::test]
async fn the_configured_frequency_penalty_is_sent_until_the_endpoint_rejects_it(
) -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("first"));
    let vars: std::collections::HashMap<&str, String> = [
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "fake-model".to_owned()),
        ("LLM_FREQUENCY_PENALTY", "0.5".to_owned()),
    ]
    .into();
    let config = switchboard::Config::from_lookup(|k| vars.get(k).cloned())?;
    let provider = switchboard::build_provider(&config)?;
    let mut stream = provider.chat_stream(ask("hi", vec![])).await?;
    while let Some(chunk) = stream.next().await {
        chunk?;
    }
    assert_eq!(llm.requests().await[0]["frequency_penalty"], 0.5);

    // An endpoint that refuses it gets the request again without it.
    llm.reject_params(&["frequency_penalty"]);
    llm.push(Reply::text("second"));
    let mut stream = provider.chat_stream(ask("again", vec![])).await?;
    let mut answer = String::new();
    while let Some(chunk) = stream.next().await {
        if let Chunk::Text(t) = chunk? {
            answer.push_str(&t);
        }
    }
    assert_eq!(answer, "second");
    let requests = llm.requests().await;
    assert_eq!(requests.len(), 3);
    assert!(requests[1].get("frequency_penalty").is_some());
    assert!(requests[2].get("frequency_penalty").is_none());
    Ok(())
}

#[tokio::test]
async fn rejected_tool_choice_is_dropped() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.reject_params(&["tool_choice"]);
    llm.push(Reply::tool_calls([("c1", "ls", json!({}))]));
    let (chunks, error) = run(&provider(&llm)?, ask("ls", vec![tool("ls")])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(calls(&chunks)[0].name, "ls");
    let requests = llm.requests().await;
    assert_eq!(requests.len(), 2);
    assert!(requests[1].get("tool_choice").is_none() && requests[1].get("tools").is_some());
    Ok(())
}

#[tokio::test]
async fn http_errors_are_classified() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    let provider = provider(&llm)?;

    llm.push(Reply::status(429, error_body("Rate limit reached", "requests", None)).retry_after(7));
    let (_, error) = run(&provider, ask("hi", vec![])).await;
    assert!(
        matches!(error, Some(ProviderError::RateLimited { retry_after: Some(d) }) if d == Duration::from_secs(7)),
        "{error:?}"
    );

    llm.push(Reply::status(
        500,
        error_body("The server had an error", "server_error", None),
    ));
    let (_, error) = run(&provider, ask("hi", vec![])).await;
    assert!(
        matches!(&error, Some(ProviderError::Server { status: 500, message }) if message == "The server had an error"),
        "{error:?}"
    );
    assert!(error.is_some_and(|e| e.is_recoverable()));

    llm.push(Reply::status(
        404,
        error_body(
            "The model `x` does not exist",
            "invalid_request_error",
            Some("model_not_found"),
        ),
    ));
    let (_, error) = run(&provider, ask("hi", vec![])).await;
    assert!(
        matches!(error, Some(ProviderError::Config { status: 404, .. })),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn bad_key_is_a_config_error_that_never_shows_the_key() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.require_api_key("sk-right-key");
    let wrong = "sk-wrong-but-secret-0123456789";
    let provider = OpenAiProvider::new(config(&llm).with_api_key(Secret::new(wrong)))?;

    let (_, error) = run(&provider, ask("hi", vec![])).await;
    let Some(error) = error else {
        anyhow::bail!("expected a 401");
    };
    assert!(
        matches!(error, ProviderError::Config { status: 401, .. }),
        "{error:?}"
    );
    // The fake echoes the key it got, as some servers do; it must be scrubbed.
    assert!(!error.to_string().contains(wrong), "{error}");
    assert!(!format!("{error:?} {provider:?}").contains(wrong));
    assert_eq!(llm.authorizations(), vec![Some(format!("Bearer {wrong}"))]);

    llm.push(Reply::text("welcome"));
    let right = OpenAiProvider::new(config(&llm).with_api_key(Secret::new("sk-right-key")))?;
    let (chunks, error) = run(&right, ask("hi", vec![])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), "welcome");
    Ok(())
}

#[tokio::test]
async fn a_stalled_stream_times_out() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("partial answer").then_stall());
    let (chunks, error) = run(&provider(&llm)?, ask("hi", vec![])).await;
    assert_eq!(text(&chunks), "partial answer");
    assert!(
        matches!(error, Some(ProviderError::Timeout(d)) if d == IDLE),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn malformed_bodies_are_invalid_responses() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    let provider = provider(&llm)?;
    for body in ["<html>Bad gateway</html>\n", "data: {not json\n\n", ""] {
        llm.push(Reply::raw_body(body));
        let (_, error) = run(&provider, ask("hi", vec![])).await;
        assert!(
            matches!(error, Some(ProviderError::InvalidResponse(_))),
            "{body:?}: {error:?}"
        );
    }
    llm.push(Reply::status(200, json!({"id": "x", "choices": []})));
    let (_, error) = run(&provider, ask("hi", vec![])).await;
    assert!(
        matches!(error, Some(ProviderError::InvalidResponse(_))),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn errors_inside_the_stream_are_classified() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::chunks(vec![
        chunk(json!({"role": "assistant", "content": "Hal"}), None),
        error_body("The server is overloaded", "server_error", None),
    ]));
    let (chunks, error) = run(&provider(&llm)?, ask("hi", vec![])).await;
    assert_eq!(text(&chunks), "Hal");
    assert!(
        matches!(&error, Some(ProviderError::Server { message, .. }) if message == "The server is overloaded"),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn network_failures_are_network_errors() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    llm.push(Reply::text("cut short").then_disconnect());
    let (chunks, error) = run(&provider(&llm)?, ask("hi", vec![])).await;
    assert_eq!(text(&chunks), "cut short");
    assert!(
        matches!(error, Some(ProviderError::Network(_))),
        "{error:?}"
    );

    // Nothing listens on a port we just released.
    let port = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await?
        .local_addr()?
        .port();
    let closed = EndpointConfig::new(
        format!("http://127.0.0.1:{port}/v1"),
        ModelInfo::new("m", None),
    );
    let (_, error) = run(&OpenAiProvider::new(closed)?, ask("hi", vec![])).await;
    assert!(
        matches!(error, Some(ProviderError::Network(_))),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn tool_call_text_becomes_calls_without_leaking() -> anyhow::Result<()> {
    const ANSWER: &str = "I'll check. <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>";
    let llm = FakeLlm::start().await;
    // By default (auto) a call inside other text is text.
    llm.push(Reply::text(ANSWER));
    let (chunks, error) = run(&provider(&llm)?, ask("read", vec![tool("read_file")])).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), ANSWER);
    assert!(calls(&chunks).is_empty());

    llm.push(Reply::text(ANSWER));
    let mut on = config(&llm);
    on.text_tool_calls = TextToolCalls::On;
    let (chunks, error) = run(
        &OpenAiProvider::new(on)?,
        ask("read", vec![tool("read_file")]),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), "I'll check. ");
    assert!(chunks
        .iter()
        .all(|c| !matches!(c, Chunk::Text(t) if t.contains('<'))));
    let got = calls(&chunks);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(&got[0].arguments)?,
        json!({"path": "a.txt"})
    );
    assert!(!got[0].id.is_empty());
    Ok(())
}

#[tokio::test]
async fn the_fake_is_strict_and_loud() -> anyhow::Result<()> {
    let llm = FakeLlm::start().await;
    let provider = provider(&llm)?;

    // Empty queue, no responder: a visible 400.
    let (_, error) = run(&provider, ask("hi", vec![])).await;
    assert!(
        matches!(&error, Some(ProviderError::Config { status: 400, message }) if message.contains("no scripted reply")),
        "{error:?}"
    );

    // A tool call left unanswered is refused like the real API does.
    let mut assistant = Message::assistant("");
    assistant.tool_calls = vec![ToolCall {
        id: "call_9".into(),
        name: "ls".into(),
        arguments: "{}".into(),
    }];
    let mut dangling = ask("hi", vec![tool("ls")]);
    dangling.messages.extend([assistant, Message::user("and?")]);
    llm.push(Reply::text("unused"));
    let (_, error) = run(&provider, dangling).await;
    assert!(
        matches!(&error, Some(ProviderError::Config { status: 400, message }) if message.contains("call_9")),
        "{error:?}"
    );
    assert_eq!(
        llm.remaining(),
        1,
        "an invalid request must not take a reply"
    );

    // The responder answers when the queue is empty.
    llm.set_responder(|request| {
        let said = support::fake_llm::last_user_text(request).unwrap_or_default();
        Reply::text(&format!("echo: {said}"))
    });
    let (chunks, _) = run(&provider, ask("ping", vec![])).await;
    assert_eq!(text(&chunks), "unused");
    let (chunks, _) = run(&provider, ask("ping", vec![])).await;
    assert_eq!(text(&chunks), "echo: ping");
    Ok(())
}
