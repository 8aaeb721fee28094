//! The Gemini provider against the strict fake Gemini server: streaming, function
//! calls and tool rounds, thought signatures, schema conversion, thoughts, usage,
//! error classification, optional-setting rejection, timeouts, key hygiene; and
//! one turn through the real gateway.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use switchboard::llm::{
    ChatRequest, Chunk, EndpointConfig, GeminiProvider, Message, ModelInfo, ProviderError,
    ToolDefinition, Usage,
};
use switchboard_platform::Secret;

use support::fake_gemini::{FakeGemini, Reply};
use support::provider::{calls, run, text};

const IDLE: Duration = Duration::from_millis(300);
const KEY: &str = "AIzaSy-test-gemini-key-123";

fn config(fake: &FakeGemini) -> EndpointConfig {
    EndpointConfig::new(fake.base_url(), ModelInfo::new("gemini-2.5-flash", None))
        .with_idle_timeout(IDLE)
        .with_api_key(Secret::new(KEY))
}

/// A provider with the key, against a fake that requires it.
fn provider(fake: &FakeGemini) -> anyhow::Result<GeminiProvider> {
    fake.require_api_key(KEY);
    Ok(GeminiProvider::new(config(fake))?)
}

fn tool(name: &str, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters,
    }
}

fn read_file_tool() -> ToolDefinition {
    tool(
        "read_file",
        json!({"type": "object", "properties": {"path": {"type": "string"}},
               "required": ["path"], "additionalProperties": false}),
    )
}

fn ask(messages: Vec<Message>, tools: Vec<ToolDefinition>) -> ChatRequest {
    ChatRequest {
        system: "You are terse.".into(),
        messages,
        tools,
    }
}

/// Runs a request that must succeed.
async fn ok(provider: &GeminiProvider, request: ChatRequest) -> anyhow::Result<Vec<Chunk>> {
    match run(provider, request).await {
        (chunks, None) => Ok(chunks),
        (_, Some(error)) => anyhow::bail!("the request failed: {error}"),
    }
}

/// Runs a request that must fail.
async fn failure(provider: &GeminiProvider, request: ChatRequest) -> anyhow::Result<ProviderError> {
    match run(provider, request).await {
        (_, Some(error)) => Ok(error),
        (chunks, None) => anyhow::bail!("expected an error, got {chunks:?}"),
    }
}

#[tokio::test]
async fn text_streams_in_pieces_with_the_key_in_the_header() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    fake.push(Reply::text("Hello there, streaming works."));
    let chunks = ok(&provider, ask(vec![Message::user("hi")], vec![])).await?;
    assert_eq!(text(&chunks), "Hello there, streaming works.");
    let pieces = chunks
        .iter()
        .filter(|c| matches!(c, Chunk::Text(_)))
        .count();
    assert!(pieces >= 3, "text arrives in several chunks: {chunks:?}");
    assert!(matches!(chunks.last(), Some(Chunk::Usage(_))), "{chunks:?}");

    let received = fake.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].model, "gemini-2.5-flash");
    assert_eq!(received[0].header_key.as_deref(), Some(KEY));
    assert!(!received[0].key_in_url, "the key never goes in the URL");
    let body = &received[0].body;
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "hi"}]}])
    );
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "You are terse."}]})
    );
    assert!(body.get("tools").is_none() && body.get("toolConfig").is_none());
    Ok(())
}

#[tokio::test]
async fn two_function_calls_in_one_reply() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    fake.push(Reply::text_then_calls(
        "Let me look.",
        [
            ("read_file", json!({"path": "a.txt"})),
            ("read_file", json!({"path": "b.txt"})),
        ],
    ));
    let chunks = ok(
        &provider,
        ask(vec![Message::user("read both")], vec![read_file_tool()]),
    )
    .await?;
    assert_eq!(text(&chunks), "Let me look.");
    let calls = calls(&chunks);
    assert_eq!(calls.len(), 2, "{chunks:?}");
    assert_eq!(calls[0].name, "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[1].arguments)?,
        json!({"path": "b.txt"})
    );
    assert_ne!(calls[0].id, calls[1].id, "each call gets its own id");
    let body = &fake.requests()[0];
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "AUTO"}})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parameters"],
        json!({"type": "OBJECT", "properties": {"path": {"type": "STRING"}}, "required": ["path"]})
    );
    Ok(())
}

/// Runs the model's calls the way the runtime does: assistant message with the
/// calls, one tool result per call (answered by name), then asks again.
async fn tool_round(
    provider: &GeminiProvider,
    mut messages: Vec<Message>,
    first: &[Chunk],
    tools: Vec<ToolDefinition>,
) -> anyhow::Result<(Vec<Message>, Vec<Chunk>)> {
    let mut assistant = Message::assistant(text(first));
    assistant.tool_calls = calls(first);
    messages.push(assistant.clone());
    for call in &assistant.tool_calls {
        messages.push(Message::tool_result(
            &call.id,
            format!("contents of {}", call.arguments),
        ));
    }
    let chunks = ok(provider, ask(messages.clone(), tools)).await?;
    Ok((messages, chunks))
}

#[tokio::test]
async fn a_full_tool_round_is_accepted_by_the_strict_fake() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    let ls = tool("ls", json!({"type": "object", "properties": {}}));
    fake.push(Reply::calls([
        ("read_file", json!({"path": "a.txt"})),
        ("ls", json!({})),
    ]));
    fake.push(Reply::text("Both done."));
    let history = vec![Message::user("look around")];
    let first = ok(
        &provider,
        ask(history.clone(), vec![read_file_tool(), ls.clone()]),
    )
    .await?;
    let (_, second) = tool_round(&provider, history, &first, vec![read_file_tool(), ls]).await?;
    assert_eq!(text(&second), "Both done.");

    let body = &fake.requests()[1];
    let contents = body["contents"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        contents.len(),
        3,
        "user, model, one merged user content: {body:#}"
    );
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(contents[1]["parts"][0]["functionCall"]["name"], "read_file");
    assert_eq!(
        contents[1]["parts"][0]["functionCall"]["args"],
        json!({"path": "a.txt"})
    );
    assert_eq!(contents[2]["role"], "user");
    let responses: Vec<&str> = contents[2]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["functionResponse"]["name"].as_str())
        .collect();
    assert_eq!(responses, ["read_file", "ls"]);
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["response"],
        json!({"result": "contents of {\"path\":\"a.txt\"}"})
    );
    // A parameterless tool is declared without `parameters` (Gemini rejects an
    // OBJECT schema with no properties).
    assert!(body["tools"][0]["functionDeclarations"][1]
        .get("parameters")
        .is_none());
    Ok(())
}

#[tokio::test]
async fn thought_signatures_round_trip_through_the_call_id() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    fake.require_thought_signatures();
    let provider = provider(&fake)?;
    fake.push(Reply::calls([("read_file", json!({"path": "a.txt"}))]));
    fake.push(Reply::text("Read it."));
    let history = vec![Message::user("read a.txt")];
    let first = ok(&provider, ask(history.clone(), vec![read_file_tool()])).await?;
    let (messages, second) = tool_round(&provider, history, &first, vec![read_file_tool()]).await?;
    assert_eq!(text(&second), "Read it.");
    let sent = &fake.requests()[1]["contents"][1]["parts"][0];
    assert!(
        sent["thoughtSignature"]
            .as_str()
            .is_some_and(|s| s.starts_with("c2ln")),
        "the signature went back on the functionCall part: {sent}"
    );

    // The fake really enforces it: the same history with Gemini's call but
    // its signature lost is refused. (A call another model made gets the
    // documented placeholder instead: see provider_mixed_fallback.)
    let unsigned = "gc_00000000000000000000000000000001";
    let mut stripped = messages;
    for message in &mut stripped {
        for call in &mut message.tool_calls {
            call.id = unsigned.into();
        }
        if message.tool_call_id.is_some() {
            message.tool_call_id = Some(unsigned.into());
        }
    }
    let error = failure(&provider, ask(stripped, vec![read_file_tool()])).await?;
    assert!(
        matches!(&error, ProviderError::Config { status: 400, message } if message.contains("thought_signature")),
        "{error}"
    );
    Ok(())
}

#[tokio::test]
async fn json_schemas_are_converted_to_what_gemini_accepts() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    let tools = vec![
        tool(
            "exec",
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "shell"},
                    "timeout_secs": {"type": "integer", "minimum": 1, "default": 30},
                    "notify": {"type": "string", "enum": ["done", "changes", "silent"]},
                    "cwd": {"type": ["string", "null"], "format": "path"},
                    "mode": {"const": "fast"},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "files": {"type": "array", "items": {"type": "object",
                        "properties": {"path": {"type": "string"}, "size": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
                        "required": ["path"], "additionalProperties": false}},
                    "tags": {"type": "array"},
                    "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                    "anything": {},
                },
                "required": ["command", "not_a_property"],
                "additionalProperties": false,
            }),
        ),
        tool(
            "noargs",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
    ];
    fake.push(Reply::text("ok"));
    let chunks = ok(&provider, ask(vec![Message::user("hi")], tools)).await?;
    assert_eq!(text(&chunks), "ok");
    let declared = &fake.requests()[0]["tools"][0]["functionDeclarations"][0]["parameters"];
    assert_eq!(
        declared["properties"]["cwd"],
        json!({"type": "STRING", "nullable": true})
    );
    assert_eq!(
        declared["properties"]["mode"],
        json!({"type": "STRING", "enum": ["fast"]})
    );
    assert_eq!(
        declared["properties"]["files"]["items"]["properties"]["size"],
        json!({"type": "INTEGER", "nullable": true})
    );
    assert_eq!(declared["required"], json!(["command"]));
    Ok(())
}

#[tokio::test]
async fn the_fake_refuses_raw_json_schema_keywords() -> anyhow::Result<()> {
    // Guards the fake itself: what the converter removes is really refused.
    let fake = FakeGemini::start().await;
    let client = reqwest::Client::new();
    let url = format!(
        "{}/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        fake.base_url()
    );
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "x", "description": "d", "parameters":
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}}]}],
    });
    let response = client.post(&url).json(&body).send().await?;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await?;
    assert_eq!(error["error"]["status"], "INVALID_ARGUMENT");
    assert!(
        error["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Unknown name \"additionalProperties\"")),
        "{error}"
    );
    Ok(())
}

#[tokio::test]
async fn thought_parts_become_thinking_and_usage_is_mapped() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    fake.push(Reply::thought_then_text("Weighing options.", "Pick B.").with_usage(100, 5, 60, 20));
    let chunks = ok(&provider, ask(vec![Message::user("A or B?")], vec![])).await?;
    let thinking: String = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Weighing options.");
    assert_eq!(text(&chunks), "Pick B.");
    let usages: Vec<&Usage> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Usage(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(
        usages,
        [&Usage {
            input_tokens: 100,
            output_tokens: 25,
            cache_read_tokens: 60,
            cache_write_tokens: 0
        }],
        "one usage: the prompt (cached included), answer + thoughts"
    );
    assert_eq!(
        fake.requests()[0]["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true})
    );

    // `LLM_THINKING_BUDGET` becomes Gemini's thinking budget.
    let mut budgeted = config(&fake);
    budgeted.thinking_budget = Some(4096);
    fake.push(Reply::text("ok"));
    let (_, error) = run(
        &GeminiProvider::new(budgeted)?,
        ask(vec![Message::user("hi")], vec![]),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        fake.requests()
            .last()
            .map(|r| r["generationConfig"]["thinkingConfig"].clone()),
        Some(json!({"includeThoughts": true, "thinkingBudget": 4096}))
    );
    Ok(())
}

#[tokio::test]
async fn errors_are_classified() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    let hi = || ask(vec![Message::user("hi")], vec![]);

    fake.push(Reply::error(429, "RESOURCE_EXHAUSTED", "Quota exceeded").with_retry_delay("7s"));
    let error = failure(&provider, hi()).await?;
    assert!(
        matches!(error, ProviderError::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(7)),
        "{error:?}"
    );
    assert!(error.is_recoverable());

    fake.push(
        Reply::error(503, "UNAVAILABLE", "The model is overloaded.").header("retry-after", "3"),
    );
    let error = failure(&provider, hi()).await?;
    assert!(
        matches!(&error, ProviderError::Server { status: 503, message } if message == "The model is overloaded.")
    );
    assert!(error.is_recoverable());

    for (code, status) in [
        (400, "INVALID_ARGUMENT"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
    ] {
        fake.push(Reply::error(code, status, "nope"));
        let error = failure(&provider, hi()).await?;
        assert!(
            matches!(&error, ProviderError::Config { status: s, .. } if *s == code),
            "{error:?}"
        );
        assert!(!error.is_recoverable());
    }

    fake.push(Reply::parts(vec![]).finish("SAFETY"));
    let error = failure(&provider, hi()).await?;
    assert!(
        matches!(&error, ProviderError::Config { message, .. } if message.contains("SAFETY")),
        "{error}"
    );
    fake.push(Reply::raw_events(vec![
        json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}),
    ]));
    let error = failure(&provider, hi()).await?;
    assert!(error.to_string().contains("PROHIBITED_CONTENT"), "{error}");
    Ok(())
}

#[tokio::test]
async fn a_rejected_frequency_penalty_is_dropped_and_remembered() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    fake.reject_generation_field(
        "frequencyPenalty",
        "Penalty is not enabled for models/{model}",
    );
    let mut config = config(&fake);
    config.frequency_penalty = Some(0.4);
    config.max_output_tokens = Some(256);
    let provider = GeminiProvider::new(config)?;
    fake.push(Reply::text("one"));
    fake.push(Reply::text("two"));
    assert_eq!(
        text(&ok(&provider, ask(vec![Message::user("a")], vec![])).await?),
        "one"
    );
    assert_eq!(
        text(&ok(&provider, ask(vec![Message::user("b")], vec![])).await?),
        "two"
    );
    let sent: Vec<Value> = fake
        .requests()
        .iter()
        .map(|r| r["generationConfig"].clone())
        .collect();
    assert_eq!(
        sent.len(),
        3,
        "one rejected request, then two without the penalty"
    );
    assert!((sent[0]["frequencyPenalty"].as_f64().unwrap_or_default() - 0.4).abs() < 1e-6);
    assert!(sent[1].get("frequencyPenalty").is_none() && sent[2].get("frequencyPenalty").is_none());
    assert_eq!(sent[2]["maxOutputTokens"], 256);
    Ok(())
}

#[tokio::test]
async fn a_stalled_stream_times_out() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    fake.push(Reply::text("partial answer").then_stall());
    let (chunks, error) = run(&provider, ask(vec![Message::user("hi")], vec![])).await;
    assert_eq!(text(&chunks), "partial answer");
    assert!(
        matches!(error, Some(ProviderError::Timeout(d)) if d == IDLE),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test]
async fn a_body_ending_without_a_finish_reason_is_an_error() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    let provider = provider(&fake)?;
    fake.push(Reply::text("cut off mid").without_finish());
    let error = failure(&provider, ask(vec![Message::user("hi")], vec![])).await?;
    assert!(
        matches!(&error, ProviderError::InvalidResponse(m) if m.contains("finishReason")),
        "{error}"
    );
    Ok(())
}

#[tokio::test]
async fn the_key_never_shows_in_errors_or_debug_output() -> anyhow::Result<()> {
    let fake = FakeGemini::start().await;
    fake.require_api_key("the-right-key-0000");
    let provider = GeminiProvider::new(config(&fake))?;
    let hi = || ask(vec![Message::user("hi")], vec![]);
    let error = failure(&provider, hi()).await?;
    assert!(
        matches!(&error, ProviderError::Config { status: 400, message } if message.contains("API key not valid"))
    );
    fake.require_api_key(KEY);
    let echoed = format!("API key {KEY} is not valid for project 123");
    fake.set_responder(move |_| Reply::error(403, "PERMISSION_DENIED", &echoed));
    let refused = failure(&provider, hi()).await?;

    // Nothing listens on this port: the request fails while connecting.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let unreachable = GeminiProvider::new(
        EndpointConfig::new(
            format!("http://{closed}/v1beta"),
            ModelInfo::new("gemini-2.5-flash", None),
        )
        .with_api_key(Secret::new(KEY)),
    )?;
    let network = failure(&unreachable, hi()).await?;
    assert!(matches!(network, ProviderError::Network(_)), "{network:?}");

    for shown in [
        format!("{error} {error:?}"),
        format!("{refused} {refused:?}"),
        format!("{network} {network:?}"),
        format!("{provider:?} {unreachable:?}"),
    ] {
        assert!(!shown.contains(KEY), "the key leaked: {shown}");
    }
    assert!(refused.to_string().contains("<redacted>"), "{refused}");
    assert!(fake.received().iter().all(|r| !r.key_in_url));
    Ok(())
}

mod e2e {
    use super::*;
    use support::e2e::Harness;

    #[tokio::test]
    async fn a_gemini_turn_with_a_tool_round_reaches_the_chat() -> anyhow::Result<()> {
        let fake = FakeGemini::start().await;
        fake.require_api_key("test-gemini-key");
        fake.require_thought_signatures();
        let h = Harness::with(&[
            ("LLM_API", "gemini"),
            ("LLM_BASE_URL", &fake.base_url()),
            ("LLM_MODEL", "gemini-2.5-flash"),
            ("LLM_API_KEY", "test-gemini-key"),
        ])
        .await;
        h.write("a.txt", "the secret word is mango\n");
        fake.push(Reply::text_then_calls(
            "Let me look.",
            [("read_file", json!({"path": "a.txt"}))],
        ));
        fake.set_responder(|request| {
            let contents = request["contents"].as_array().cloned().unwrap_or_default();
            let result = contents
                .iter()
                .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                .find_map(|p| {
                    p["functionResponse"]["response"]["result"]
                        .as_str()
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            if result.contains("mango") {
                Reply::text("The word is mango.")
            } else {
                Reply::text(&format!("no file content seen: {request}"))
            }
        });
        h.channel.dm(1, "what is in a.txt?").await;
        h.wait_for("the answer after the tool round", |l| {
            l.has_text("Let me look.\n\nThe word is mango.")
        })
        .await;
        h.idle().await;

        let requests = fake.wait_for_requests(2).await;
        assert_eq!(
            requests.len(),
            2,
            "one call per round, none refused by the fake"
        );
        // The gateway declared its real built-in tools and the strict fake
        // accepted every converted schema.
        let declared: Vec<&str> = requests[0]["tools"][0]["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d["name"].as_str())
            .collect();
        for name in [
            "read_file",
            "write_file",
            "exec_command",
            "web_fetch",
            "schedule",
            "remember",
            "execute_skill",
        ] {
            assert!(declared.contains(&name), "{name} missing from {declared:?}");
        }
        assert!(fake
            .received()
            .iter()
            .all(|r| r.header_key.as_deref() == Some("test-gemini-key")));
        assert!(
            h.llm.requests().await.is_empty(),
            "the OpenAI fake stays unused"
        );
        h.stop().await;
        Ok(())
    }
}
