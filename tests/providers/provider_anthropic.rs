//! The Anthropic provider against the strict fake Messages API: streaming, tool
//! calls from fragments, tool rounds, prompt caching, usage, thinking, error
//! classification, timeouts, secrets; and one turn through the whole gateway.

use crate::support;

use std::time::Duration;

use anyhow::Context;
use serde_json::{json, Value};
use switchboard::llm::{
    AnthropicProvider, ChatRequest, Chunk, EndpointConfig, Message, ModelInfo, ProviderError,
    SignedReasoning, ToolCall, ToolDefinition, Usage,
};
use switchboard_platform::Secret;

use support::fake_anthropic::{FakeAnthropic, Reply};
use support::provider::{run, signed};

const IDLE: Duration = Duration::from_millis(300);
const KEY: &str = "sk-ant-test-0123456789";

fn provider(fake: &FakeAnthropic) -> anyhow::Result<AnthropicProvider> {
    fake.require_api_key(KEY);
    let config = EndpointConfig::new(fake.base_url(), ModelInfo::new("claude-test", None))
        .with_api_key(Secret::new(KEY))
        .with_idle_timeout(IDLE);
    Ok(AnthropicProvider::new(config)?)
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        system: "You are terse.".into(),
        messages: vec![Message::user(text)],
        tools: vec![tool("read_file")],
    }
}

fn joined(chunks: &[Chunk], thinking: bool) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Text(t) if !thinking => Some(t.as_str()),
            Chunk::Thinking(t) if thinking => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn breakpoints(request: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut walk = vec![("".to_owned(), request)];
    while let Some((path, value)) = walk.pop() {
        match value {
            Value::Object(map) => {
                if map.contains_key("cache_control") {
                    found.push(path.clone());
                }
                walk.extend(map.iter().map(|(k, v)| (format!("{path}/{k}"), v)));
            }
            Value::Array(items) => {
                walk.extend(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (format!("{path}/{i}"), v)),
                );
            }
            _ => {}
        }
    }
    found.sort();
    found
}

#[tokio::test]
async fn text_streams_with_the_real_request_shape() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    fake.push(Reply::text("Hello there, streaming works."));
    let (chunks, error) = run(&provider(&fake)?, ask("hi")).await;
    assert!(error.is_none(), "{error:?} {:?}", fake.rejections());
    let texts = chunks
        .iter()
        .filter(|c| matches!(c, Chunk::Text(_)))
        .count();
    assert!(texts >= 3, "text arrives in pieces: {chunks:?}");
    assert_eq!(joined(&chunks, false), "Hello there, streaming works.");

    let headers = &fake.headers()[0];
    assert_eq!(headers["x-api-key"], KEY);
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    let body = &fake.requests()[0];
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(body["stream"], true);
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(body["system"][0]["text"], "You are terse.");
    Ok(())
}

#[tokio::test]
async fn two_tool_calls_are_assembled_from_fragments() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    fake.push(Reply::text_then_tool_uses(
        "Let me look.",
        [
            ("toolu_1", "read_file", json!({"path": "a.txt"})),
            (
                "toolu_2",
                "read_file",
                json!({"path": "dir/ü b.txt", "n": [1, 2]}),
            ),
        ],
    ));
    let (chunks, error) = run(&provider(&fake)?, ask("read two")).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(joined(&chunks, false), "Let me look.");
    let calls: Vec<&ToolCall> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolCalls(calls) => Some(calls),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(calls.len(), 2, "{chunks:?}");
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("toolu_1", "read_file")
    );
    let second: Value = serde_json::from_str(&calls[1].arguments)?;
    assert_eq!(second, json!({"path": "dir/ü b.txt", "n": [1, 2]}));
    assert!(
        matches!(chunks.last(), Some(Chunk::Usage(_))),
        "usage comes last"
    );
    Ok(())
}

#[tokio::test]
async fn a_full_tool_round_passes_the_strict_fake_with_sliding_cache() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    fake.push(Reply::text("Both files say hi."));
    let mut assistant = Message::assistant("Reading both.");
    assistant.tool_calls = vec![
        ToolCall {
            id: "toolu_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        },
        ToolCall {
            id: "toolu_2".into(),
            name: "read_file".into(),
            arguments: "{not json".into(),
        },
    ];
    assistant.reasoning = Some("private reasoning".into());
    let request = ChatRequest {
        system: "You are terse.".into(),
        messages: vec![
            Message::user("read a and b"),
            assistant,
            Message::tool_result("toolu_1", "hi from a"),
            Message::tool_result("toolu_2", "error: invalid JSON arguments"),
            Message::user("and summarise"),
        ],
        tools: vec![tool("read_file")],
    };
    let (chunks, error) = run(&provider(&fake)?, request).await;
    assert!(error.is_none(), "{error:?} {:?}", fake.rejections());
    assert_eq!(joined(&chunks, false), "Both files say hi.");

    let body = &fake.requests()[0];
    let messages = body["messages"].as_array().context("messages")?;
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(
        messages[1]["content"][2]["input"],
        json!({"_unparsed_arguments": "{not json"})
    );
    let last = messages[2]["content"].as_array().context("blocks")?;
    let kinds: Vec<&str> = last.iter().filter_map(|b| b["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["tool_result", "tool_result", "text"],
        "results merged, first"
    );
    assert!(!body.to_string().contains("private reasoning"));
    assert_eq!(breakpoints(body), ["/messages/2/content/2", "/system/0"]);
    Ok(())
}

/// A provider with extended thinking on (`LLM_THINKING_BUDGET`).
fn thinking_provider(fake: &FakeAnthropic, budget: u32) -> anyhow::Result<AnthropicProvider> {
    fake.require_api_key(KEY);
    let mut config = EndpointConfig::new(fake.base_url(), ModelInfo::new("claude-test", None))
        .with_api_key(Secret::new(KEY))
        .with_idle_timeout(IDLE);
    config.thinking_budget = Some(budget);
    Ok(AnthropicProvider::new(config)?)
}

#[tokio::test]
async fn usage_counts_cache_reads_and_writes_and_thinking_streams() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    fake.push(Reply::thinking("Let me think hard.", "42").with_usage(12, 7, 3000, 500));
    let (chunks, error) = run(&thinking_provider(&fake, 2048)?, ask("answer")).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(joined(&chunks, true), "Let me think hard.");
    assert_eq!(joined(&chunks, false), "42");
    let request = &fake.requests()[0];
    assert_eq!(
        request["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        request["max_tokens"],
        8192 + 2048,
        "the answer keeps its default room on top of the thinking"
    );
    assert!(
        matches!(&signed(&chunks)[..], [SignedReasoning::Thinking { thinking, signature }]
            if thinking == "Let me think hard." && !signature.is_empty())
    );
    let usage = Usage {
        input_tokens: 3512,
        output_tokens: 7,
        cache_read_tokens: 3000,
        cache_write_tokens: 500,
    };
    assert_eq!(
        chunks.last(),
        Some(&Chunk::Usage(usage)),
        "input counts the whole prompt"
    );
    Ok(())
}

/// The model's first answer to "what is in a.txt?" with thinking on: a signed
/// thinking block and a `read_file` call, as the assistant message to send back.
async fn signed_tool_call(fake: &FakeAnthropic, p: &AnthropicProvider) -> Message {
    fake.push(Reply::thinking_then_tool_uses(
        "The file will say. ",
        [("toolu_1", "read_file", json!({"path": "a.txt"}))],
    ));
    let (chunks, error) = run(p, ask("what is in a.txt?")).await;
    assert!(error.is_none(), "{error:?}");
    let mut call = Message::assistant("");
    call.tool_calls = support::provider::calls(&chunks);
    call.signed_reasoning = signed(&chunks);
    call
}

#[tokio::test]
async fn extended_thinking_sends_its_signed_blocks_back_through_a_tool_loop() -> anyhow::Result<()>
{
    let fake = FakeAnthropic::start().await;
    let p = thinking_provider(&fake, 2048)?;
    let call = signed_tool_call(&fake, &p).await;
    assert_eq!(call.signed_reasoning.len(), 1);
    let mut request = ask("what is in a.txt?");
    request.messages.push(call.clone());
    request
        .messages
        .push(Message::tool_result("toolu_1", "pelican"));

    // The unmodified block passes the fake's signature check.
    fake.push(Reply::thinking("It said pelican. ", "Pelican."));
    let (chunks, error) = run(&p, request.clone()).await;
    assert!(error.is_none(), "{error:?} {:?}", fake.rejections());
    assert_eq!(joined(&chunks, false), "Pelican.");
    let sent = &fake.requests()[1];
    assert_eq!(sent["thinking"]["type"], "enabled");
    assert_eq!(sent["messages"][1]["content"][0]["type"], "thinking");
    assert_eq!(sent["messages"][1]["content"][1]["type"], "tool_use");

    // A tampered block is refused like the real API refuses it.
    let mut tampered = request.clone();
    if let Some(SignedReasoning::Thinking { thinking, .. }) =
        tampered.messages[1].signed_reasoning.first_mut()
    {
        thinking.push_str(" (edited)");
    }
    let error = run(&p, tampered)
        .await
        .1
        .context("a forged signature fails")?;
    assert!(
        matches!(error, ProviderError::Config { status: 400, .. }),
        "{error:?}"
    );
    assert!(fake
        .rejections()
        .last()
        .is_some_and(|r| r.contains("Invalid `signature`")));

    // A loop another provider began (no signed thinking) goes without
    // thinking instead of being refused.
    let mut foreign = request;
    foreign.messages[1].signed_reasoning.clear();
    fake.push(Reply::thinking("unseen", "Pelican, still."));
    let (chunks, error) = run(&p, foreign).await;
    assert!(error.is_none(), "{error:?} {:?}", fake.rejections());
    assert_eq!(joined(&chunks, false), "Pelican, still.");
    assert!(fake
        .requests()
        .last()
        .is_some_and(|r| r.get("thinking").is_none()));
    assert!(joined(&chunks, true).is_empty());
    Ok(())
}

#[tokio::test]
async fn a_compacted_history_keeps_the_signed_thinking_first() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    let p = thinking_provider(&fake, 2048)?;
    let call = signed_tool_call(&fake, &p).await;
    // Compaction folded the question: the kept tail starts at the signed
    // call, right after the summary and its acknowledgement.
    let mut messages =
        switchboard::agent::summary_messages("The user asked what a.txt says.").to_vec();
    messages.extend([call, Message::tool_result("toolu_1", "pelican")]);
    fake.push(Reply::thinking("It said pelican. ", "Pelican."));
    let request = ChatRequest {
        messages,
        ..ask("unused")
    };
    let (chunks, error) = run(&p, request).await;
    assert!(error.is_none(), "{error:?} {:?}", fake.rejections());
    assert_eq!(joined(&chunks, false), "Pelican.");
    let sent = &fake.requests()[1];
    assert_eq!(sent["thinking"]["type"], "enabled");
    assert_eq!(sent["messages"][1]["content"][0]["type"], "thinking");
    Ok(())
}

#[tokio::test]
async fn redacted_thinking_is_kept_opaque() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    fake.push(Reply::redacted_thinking("Done."));
    let (chunks, error) = run(&thinking_provider(&fake, 1024)?, ask("x")).await;
    assert!(error.is_none(), "{error:?}");
    assert!(joined(&chunks, true).is_empty(), "nothing readable to show");
    assert!(matches!(
        &signed(&chunks)[..],
        [SignedReasoning::RedactedThinking { data }] if !data.is_empty()
    ));
    Ok(())
}

#[tokio::test]
async fn http_errors_are_classified() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    let p = provider(&fake)?;
    fake.push(Reply::status(429, "rate_limit_error", "Number of requests exceeded").retry_after(7));
    fake.push(Reply::status(529, "overloaded_error", "Overloaded"));
    fake.push(Reply::status(500, "api_error", "Internal server error"));
    fake.push(Reply::status(404, "not_found_error", "model: claude-test"));
    let rate = run(&p, ask("x")).await.1;
    assert!(
        matches!(rate, Some(ProviderError::RateLimited { retry_after: Some(d) }) if d == Duration::from_secs(7)),
        "{rate:?}"
    );
    let busy = run(&p, ask("x")).await.1.context("529 fails")?;
    assert!(
        matches!(&busy, ProviderError::Server { status: 529, message } if message.contains("overloaded_error"))
    );
    assert!(busy.is_recoverable());
    let broken = run(&p, ask("x")).await.1.context("500 fails")?;
    assert!(matches!(broken, ProviderError::Server { status: 500, .. }));
    let missing = run(&p, ask("x")).await.1.context("404 fails")?;
    assert!(matches!(missing, ProviderError::Config { status: 404, .. }));
    assert!(!missing.is_recoverable());

    fake.push(Reply::status(
        400,
        "invalid_request_error",
        "prompt is too long",
    ));
    let bad = run(&p, ask("x")).await.1.context("400 fails")?;
    assert!(
        matches!(&bad, ProviderError::Config { status: 400, message } if message.contains("prompt is too long")),
        "{bad:?}"
    );
    assert!(!bad.is_recoverable());

    let wrong_key = EndpointConfig::new(fake.base_url(), ModelInfo::new("claude-test", None))
        .with_api_key(Secret::new("sk-ant-wrong-key"));
    let unauthorized = run(&AnthropicProvider::new(wrong_key)?, ask("x")).await.1;
    assert!(
        matches!(&unauthorized, Some(ProviderError::Config { status: 401, message }) if message.contains("authentication_error")),
        "{unauthorized:?}"
    );
    assert!(!unauthorized.context("401")?.is_recoverable());
    Ok(())
}

#[tokio::test]
async fn stalls_truncation_and_stream_errors_fail_the_stream() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    let p = provider(&fake)?;
    fake.push(Reply::text("partial answer").then_stall());
    fake.push(Reply::text("cut off").truncated());
    fake.push(Reply::text("so far").then_error("overloaded_error", "Overloaded"));

    let (chunks, error) = run(&p, ask("x")).await;
    assert_eq!(joined(&chunks, false), "partial answer");
    assert!(
        matches!(error, Some(ProviderError::Timeout(d)) if d == IDLE),
        "{error:?}"
    );

    let (chunks, error) = run(&p, ask("x")).await;
    assert_eq!(joined(&chunks, false), "cut off");
    assert!(
        matches!(&error, Some(ProviderError::InvalidResponse(m)) if m.contains("message_stop")),
        "{error:?}"
    );

    let (chunks, error) = run(&p, ask("x")).await;
    assert_eq!(joined(&chunks, false), "so far");
    let error = error.context("an error event fails the stream")?;
    assert!(
        matches!(&error, ProviderError::Server { status: 529, .. }),
        "{error:?}"
    );
    assert!(error.is_recoverable());
    Ok(())
}

#[tokio::test]
async fn the_key_never_shows_in_errors_or_debug_output() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    let p = provider(&fake)?;
    assert!(!format!("{p:?}").contains(KEY));
    fake.push(Reply::status(
        401,
        "authentication_error",
        &format!("invalid x-api-key {KEY}"),
    ));
    fake.push(Reply::text("x").then_error("api_error", &format!("internal: key {KEY}")));
    for _ in 0..2 {
        let error = run(&p, ask("x")).await.1.context("fails")?;
        let shown = format!("{error} {error:?}");
        assert!(
            !shown.contains(KEY) && shown.contains("<redacted>"),
            "{shown}"
        );
    }
    // Transport errors too (nothing listens on port 9 of loopback).
    let config = EndpointConfig::new(
        format!("http://127.0.0.1:9/{KEY}"),
        ModelInfo::new("m", None),
    )
    .with_api_key(Secret::new(KEY));
    let error = run(&AnthropicProvider::new(config)?, ask("x"))
        .await
        .1
        .context("fails")?;
    assert!(matches!(error, ProviderError::Network(_)));
    assert!(!format!("{error} {error:?}").contains(KEY));
    Ok(())
}

/// What the strict fake answers to a hand-written request body.
async fn fake_verdict(
    fake: &FakeAnthropic,
    body: Value,
    version: bool,
) -> anyhow::Result<(u16, String)> {
    let mut request = reqwest::Client::new()
        .post(format!("{}/messages", fake.base_url()))
        .header("x-api-key", KEY)
        .json(&body);
    if version {
        request = request.header("anthropic-version", "2023-06-01");
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    Ok((
        status,
        body["error"]["type"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    ))
}

#[tokio::test]
async fn the_fake_is_as_strict_as_the_real_api() -> anyhow::Result<()> {
    let fake = FakeAnthropic::start().await;
    fake.require_api_key(KEY);
    fake.set_responder(|_| Reply::text("ok"));
    let base = || {
        json!({"model": "m", "max_tokens": 10, "stream": true,
                         "messages": [{"role": "user", "content": "hi"}]})
    };
    let with = |field: &str, value: Value| {
        let mut body = base();
        body[field] = value;
        body
    };
    let tool_use = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]});
    let cached = json!({"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}});
    let refused = [
        ("no max_tokens", {
            let mut b = base();
            b.as_object_mut().map(|o| o.remove("max_tokens"));
            b
        }),
        ("zero max_tokens", with("max_tokens", json!(0))),
        ("no model", with("model", json!(""))),
        ("empty messages", with("messages", json!([]))),
        (
            "assistant first",
            with("messages", json!([{"role": "assistant", "content": "hi"}])),
        ),
        (
            "system role",
            with(
                "messages",
                json!([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]),
            ),
        ),
        (
            "same role twice",
            with(
                "messages",
                json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]),
            ),
        ),
        (
            "empty text",
            with(
                "messages",
                json!([{"role": "user", "content": [{"type": "text", "text": ""}]}]),
            ),
        ),
        (
            "unanswered tool_use",
            with(
                "messages",
                json!([{"role": "user", "content": "a"}, tool_use, {"role": "user", "content": "b"}]),
            ),
        ),
        (
            "wrong tool_use_id",
            with(
                "messages",
                json!([{"role": "user", "content": "a"}, tool_use,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "r"}]}]),
            ),
        ),
        (
            "input not an object",
            with(
                "messages",
                json!([{"role": "user", "content": "a"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": "{}"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}]),
            ),
        ),
        (
            "five breakpoints",
            with("system", json!([cached, cached, cached, cached, cached])),
        ),
        (
            "schema not an object",
            with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "string"}}]),
            ),
        ),
        ("no schema", with("tools", json!([{"name": "f"}]))),
        (
            "thinking budget below 1024",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1000}),
            ),
        ),
        ("max_tokens not above the thinking budget", {
            let mut b = with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1024}),
            );
            b["max_tokens"] = json!(1024);
            b
        }),
        ("a final tool_use turn without its thinking", {
            let mut b = with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1024}),
            );
            b["max_tokens"] = json!(4096);
            b["messages"] = json!([{"role": "user", "content": "a"}, tool_use,
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}]);
            b
        }),
        (
            "a forged thinking signature",
            with(
                "messages",
                json!([{"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "made-up"}, {"type": "text", "text": "b"}]},
                {"role": "user", "content": "c"}]),
            ),
        ),
        (
            "thinking in a user message",
            with(
                "messages",
                json!([{"role": "user", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}]),
            ),
        ),
    ];
    for (case, body) in refused {
        let verdict = fake_verdict(&fake, body, true).await?;
        assert_eq!(verdict, (400, "invalid_request_error".to_owned()), "{case}");
    }
    assert_eq!(
        fake_verdict(&fake, base(), false).await?.0,
        400,
        "anthropic-version is required"
    );
    assert_eq!(
        fake_verdict(&fake, base(), true).await?.0,
        200,
        "a valid request passes"
    );
    Ok(())
}

#[tokio::test]
async fn a_tool_round_through_the_gateway_reaches_the_chat() -> anyhow::Result<()> {
    use support::e2e::Harness;
    let fake = FakeAnthropic::start().await;
    fake.require_api_key("sk-ant-test");
    let base = fake.base_url();
    let h = Harness::with(&[
        ("LLM_API", "anthropic"),
        ("LLM_BASE_URL", &base),
        ("LLM_API_KEY", "sk-ant-test"),
    ])
    .await;
    h.write("a.txt", "the secret word is pelican\n");
    fake.push(Reply::text_then_tool_uses(
        "Let me read it.",
        [("toolu_1", "read_file", json!({"path": "a.txt"}))],
    ));
    fake.push(Reply::text("The word is pelican."));
    h.channel.dm(1, "what does a.txt say?").await;
    h.wait_for("the answer after the tool round", |l| {
        l.any_contains("The word is pelican.")
    })
    .await;
    h.idle().await;

    let requests = fake.wait_for_requests(2).await;
    assert_eq!(requests.len(), 2, "rejections: {:?}", fake.rejections());
    let messages = requests[1]["messages"].as_array().context("messages")?;
    let last = messages.last().context("a last message")?;
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_1");
    assert!(last["content"][0]["content"]
        .to_string()
        .contains("pelican"));
    assert!(breakpoints(&requests[1]).len() <= 4);

    // The next turn replays the whole tool round from history, still valid.
    fake.push(Reply::text("Anything else?"));
    h.channel.dm(1, "thanks").await;
    h.wait_for("the next answer", |l| l.any_contains("Anything else?"))
        .await;
    let requests = fake.wait_for_requests(3).await;
    let roles: Vec<&str> = requests[2]["messages"]
        .as_array()
        .context("messages")?
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    h.stop().await;
    Ok(())
}

#[tokio::test]
async fn extended_thinking_through_the_gateway_keeps_its_signed_blocks() -> anyhow::Result<()> {
    use support::e2e::Harness;
    let fake = FakeAnthropic::start().await;
    let base = fake.base_url();
    let h = Harness::with(&[
        ("LLM_API", "anthropic"),
        ("LLM_BASE_URL", &base),
        ("LLM_THINKING_BUDGET", "2048"),
    ])
    .await;
    h.write("a.txt", "the secret word is heron\n");
    fake.push(Reply::thinking_then_tool_uses(
        "I should read the file. ",
        [("toolu_1", "read_file", json!({"path": "a.txt"}))],
    ));
    fake.push(Reply::thinking("It says heron. ", "The word is heron."));
    h.channel.dm(1, "what does a.txt say?").await;
    h.wait_for("the answer after the tool round", |l| {
        l.any_contains("The word is heron.")
    })
    .await;
    h.idle().await;
    // The second call carried the first call's signed thinking, verified by
    // the fake; a lost or altered block would have been refused.
    let requests = fake.wait_for_requests(2).await;
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    let assistant = &requests[1]["messages"][1]["content"];
    assert_eq!(assistant[0]["type"], "thinking", "{assistant:#}");
    assert_eq!(assistant[0]["thinking"], "I should read the file. ");

    // The next question starts a new loop: the stored history replays
    // without the old loop's thinking, and thinking is on again.
    fake.push(Reply::text("You're welcome."));
    h.channel.dm(1, "thanks").await;
    h.wait_for("the next answer", |l| l.any_contains("You're welcome."))
        .await;
    let requests = fake.wait_for_requests(3).await;
    assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    assert_eq!(requests[2]["thinking"]["type"], "enabled");
    assert!(!requests[2]["messages"].to_string().contains("\"thinking\""));
    h.stop().await;
    Ok(())
}
