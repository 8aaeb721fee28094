//! Images in each provider's own shape, against fakes as strict as the real
//! APIs: a well-formed image reaches the model (the fake says what it sees),
//! a malformed one is refused with the vendor's own 400.

use crate::support;

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use switchboard::llm::{
    AnthropicProvider, ChatRequest, EndpointConfig, GeminiProvider, Image, Message, ModelInfo,
    OpenAiProvider, Provider, ProviderError,
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
