//! Images in each provider's own shape, against fakes as strict as the real
//! APIs: a well-formed image reaches the model (the fake says what it sees),
//! a malformed one is refused with the vendor's own 400; a tool result's
//! images go where each API takes them.

use crate::support;

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use switchboard::llm::{
    AnthropicProvider, ChatRequest, EndpointConfig, GeminiProvider, Image, Message, ModelInfo,
    OpenAiProvider, Provider, ProviderError, ToolCall, ToolDefinition,
};
use switchboard_platform::Secret;

use support::provider::{run, text};

const IDLE: Duration = Duration::from_millis(300);

fn png(w: u32, h: u32) -> Vec<u8> {
    let mut out = Vec::new();
    image::RgbImage::from_pixel(w, h, image::Rgb([1, 2, 3]))
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap_or_default();
    out
}

/// A question with one image of `mime` holding `bytes`.
fn asking(mime: &str, bytes: &[u8]) -> ChatRequest {
    let mut m = Message::user("what is this?");
    m.images.push(Image {
        mime: mime.into(),
        hash: "h".into(),
        width: 2,
        height: 1,
        data: Some(Arc::from(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        )),
    });
    ChatRequest {
        system: "Be brief.".into(),
        messages: vec![m],
        tools: vec![],
    }
}

fn seen(request: &serde_json::Value) -> String {
    let seen: Vec<String> = support::images::in_request(request)
        .iter()
        .map(|b| support::images::describe(b))
        .collect();
    format!("I see {}", seen.join(", "))
}

/// The 400 a provider got, as its message.
fn refused(error: Option<ProviderError>) -> String {
    match error {
        Some(ProviderError::Config {
            status: 400,
            message,
        }) => message,
        other => format!("not a 400: {other:?}"),
    }
}

#[tokio::test]
async fn openai_compatible_endpoints_get_data_urls() -> anyhow::Result<()> {
    let fake = support::fake_llm::FakeLlm::start().await;
    fake.set_responder(|r| support::fake_llm::Reply::text(&seen(r)));
    let config = EndpointConfig::new(fake.base_url(), ModelInfo::new("gpt-4o", None))
        .with_idle_timeout(IDLE);
    let p = OpenAiProvider::new(config)?;
    let (chunks, error) = run(&p, asking("image/png", &png(2, 1))).await;
    assert!(error.is_none(), "{error:?}");
    assert!(text(&chunks).starts_with("I see 2x1"), "{}", text(&chunks));

    let (_, error) = run(&p, asking("application/zip", b"PK\x03\x04")).await;
    assert!(refused(error).contains("unsupported MIME type 'application/zip'"));
    let (_, error) = run(&p, asking("image/png", b"not an image")).await;
    assert!(refused(error).contains("You uploaded an unsupported image"));
    fake.without_vision();
    let (_, error) = run(&p, asking("image/png", &png(2, 1))).await;
    assert!(refused(error).contains("image_url is only supported by certain models"));
    Ok(())
}

#[tokio::test]
async fn anthropic_gets_base64_image_blocks() -> anyhow::Result<()> {
    let fake = support::fake_anthropic::FakeAnthropic::start().await;
    fake.set_responder(|r| support::fake_anthropic::Reply::text(&seen(r)));
    let config = EndpointConfig::new(fake.base_url(), ModelInfo::new("claude-sonnet-4", None))
        .with_api_key(Secret::new("sk-ant-test-0123456789"))
        .with_idle_timeout(IDLE);
    let p = AnthropicProvider::new(config)?;
    let (chunks, error) = run(&p, asking("image/png", &png(2, 1))).await;
    assert!(error.is_none(), "{error:?}");
    assert!(text(&chunks).starts_with("I see 2x1"), "{}", text(&chunks));

    let (_, error) = run(&p, asking("image/jpeg", &png(2, 1))).await;
    assert!(refused(error).contains(
        "specified using the image/jpeg media type, but the image appears to be a image/png image"
    ));
    let (_, error) = run(&p, asking("image/bmp", &png(2, 1))).await;
    assert!(refused(error)
        .contains("Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"));
    Ok(())
}

#[tokio::test]
async fn gemini_gets_inline_data_parts() -> anyhow::Result<()> {
    let fake = support::fake_gemini::FakeGemini::start().await;
    fake.set_responder(|r| support::fake_gemini::Reply::text(&seen(r)));
    let config = EndpointConfig::new(fake.base_url(), ModelInfo::new("gemini-2.5-flash", None))
        .with_api_key(Secret::new("AIzaSy-test-gemini-key-123"))
        .with_idle_timeout(IDLE);
    let p = GeminiProvider::new(config)?;
    let (chunks, error) = run(&p, asking("image/png", &png(2, 1))).await;
    assert!(error.is_none(), "{error:?}");
    assert!(text(&chunks).starts_with("I see 2x1"), "{}", text(&chunks));

    let (_, error) = run(&p, asking("application/zip", b"PK\x03\x04")).await;
    assert!(refused(error).contains("Unsupported MIME type: application/zip"));
    let (_, error) = run(&p, asking("image/png", b"garbage")).await;
    assert!(refused(error).contains("Unable to process input image"));
    Ok(())
}

/// The placeholder stands in where an image was not loaded, on every API.
#[tokio::test]
async fn unloaded_images_are_placeholders() -> anyhow::Result<()> {
    let fake = support::fake_llm::FakeLlm::start().await;
    fake.set_responder(|_| support::fake_llm::Reply::text("ok"));
    let config = EndpointConfig::new(fake.base_url(), ModelInfo::new("gpt-4o", None))
        .with_idle_timeout(IDLE);
    let p: Box<dyn Provider> = Box::new(OpenAiProvider::new(config)?);
    let mut request = asking("image/png", &png(2, 1));
    request.messages[0].images[0].data = None;
    let (_, error) = run(p.as_ref(), request).await;
    assert!(error.is_none(), "{error:?}");
    let sent = fake.requests().await;
    assert_eq!(
        sent[0]["messages"][1]["content"],
        "what is this?\n[image 2x1 sent earlier; no longer shown]"
    );
    Ok(())
}

/// A tool round whose result carries an image (an MCP image result).
fn tool_image_round(bytes: &[u8]) -> ChatRequest {
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall {
        id: "call_shot1".into(),
        name: "mcp_cam_shot".into(),
        arguments: "{}".into(),
    }];
    let mut result = Message::tool_result(
        "call_shot1",
        format!(
            "[image result 1: image/png, {} bytes — attached]",
            bytes.len()
        ),
    );
    result.images.push(Image {
        mime: "image/png".into(),
        hash: "h".into(),
        width: 3,
        height: 2,
        data: Some(Arc::from(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        )),
    });
    ChatRequest {
        system: "Be brief.".into(),
        messages: vec![Message::user("take a shot"), call, result],
        tools: vec![ToolDefinition {
            name: "mcp_cam_shot".into(),
            description: "takes a shot".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        }],
    }
}

/// A tool's image reaches the model on every API, placed where that API
/// takes it; the strict fakes refuse any other placement.
#[tokio::test]
async fn tool_result_images_reach_each_model_where_its_api_takes_them() -> anyhow::Result<()> {
    let shot = png(3, 2);
    let expected = format!("I see {}", support::images::describe(&shot));

    let openai = support::fake_llm::FakeLlm::start().await;
    openai.set_responder(|r| support::fake_llm::Reply::text(&seen(r)));
    let config = EndpointConfig::new(openai.base_url(), ModelInfo::new("gpt-4o", None))
        .with_idle_timeout(IDLE);
    let p = OpenAiProvider::new(config)?;
    let (chunks, error) = run(&p, tool_image_round(&shot)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), expected);
    let sent = &openai.requests().await[0]["messages"];
    assert_eq!(sent[3]["role"], "tool");
    assert!(sent[3]["content"].is_string(), "{sent}");
    assert_eq!(sent[4]["role"], "user");
    assert_eq!(
        sent[4]["content"][0]["text"],
        "Images returned by mcp_cam_shot:"
    );
    // The real API refuses an image inside a tool message; so does the fake.
    let mut wrong = openai.requests().await[0].clone();
    wrong["messages"][3]["content"] = serde_json::json!([sent[4]["content"][1].clone()]);
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", openai.base_url()))
        .json(&wrong)
        .send()
        .await?;
    assert_eq!(response.status(), 400);
    let body = response.text().await?;
    assert!(
        body.contains("Image URLs are only allowed for messages with role 'user'"),
        "{body}"
    );

    let anthropic = support::fake_anthropic::FakeAnthropic::start().await;
    anthropic.set_responder(|r| support::fake_anthropic::Reply::text(&seen(r)));
    let config = EndpointConfig::new(
        anthropic.base_url(),
        ModelInfo::new("claude-sonnet-4", None),
    )
    .with_api_key(Secret::new("sk-ant-test-0123456789"))
    .with_idle_timeout(IDLE);
    let p = AnthropicProvider::new(config)?;
    let (chunks, error) = run(&p, tool_image_round(&shot)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), expected);
    let sent = &anthropic.requests()[0]["messages"][2]["content"][0];
    assert_eq!(sent["type"], "tool_result");
    assert_eq!(sent["content"][1]["type"], "image");

    let gemini = support::fake_gemini::FakeGemini::start().await;
    gemini.set_responder(|r| support::fake_gemini::Reply::text(&seen(r)));
    let config = EndpointConfig::new(gemini.base_url(), ModelInfo::new("gemini-2.5-flash", None))
        .with_api_key(Secret::new("AIzaSy-test-gemini-key-123"))
        .with_idle_timeout(IDLE);
    let p = GeminiProvider::new(config)?;
    let (chunks, error) = run(&p, tool_image_round(&shot)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text(&chunks), expected);
    let turn = &gemini.requests()[0]["contents"][2];
    assert!(turn["parts"][0].get("functionResponse").is_some(), "{turn}");
    assert!(turn["parts"][1].get("inlineData").is_some(), "{turn}");
    Ok(())
}
