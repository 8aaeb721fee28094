//! A fallback of another protocol continues a turn the primary started: Gemini
//! signs its tool call (the signature rides in the call id), then fails; the
//! Anthropic fallback gets the same conversation — with ids it accepts — and
//! answers. Both fakes are as strict as the real APIs about call ids.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::json;
use support::e2e::Harness;
use support::fake_anthropic::{FakeAnthropic, Reply as AnthropicReply};
use support::fake_gemini::{FakeGemini, Reply as GeminiReply};

#[tokio::test]
async fn an_anthropic_fallback_finishes_a_turn_gemini_started() {
    let gemini = FakeGemini::start().await;
    gemini.require_thought_signatures();
    let anthropic = FakeAnthropic::start().await;
    let h = Harness::with(&[
        ("LLM_API", "gemini"),
        ("LLM_BASE_URL", &gemini.base_url()),
        ("LLM_MODEL", "gemini-2.5-flash"),
        ("LLM_FALLBACK_1_API", "anthropic"),
        ("LLM_FALLBACK_1_BASE_URL", &anthropic.base_url()),
        ("LLM_FALLBACK_1_MODEL", "claude-sonnet-4"),
    ])
    .await;
    h.write("a.txt", "the secret word is mango\n");
    gemini.push(GeminiReply::calls([(
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    gemini.push(GeminiReply::error(
        503,
        "UNAVAILABLE",
        "The model is overloaded.",
    ));
    gemini.push(GeminiReply::error(
        503,
        "UNAVAILABLE",
        "The model is overloaded.",
    ));
    gemini.push(GeminiReply::error(
        503,
        "UNAVAILABLE",
        "The model is overloaded.",
    ));
    anthropic.push(AnthropicReply::text("The word is mango."));

    h.channel.dm(1, "what is in a.txt?").await;
    h.wait_for("the fallback's answer", |l| {
        l.has_text("The word is mango.")
    })
    .await;
    h.idle().await;

    let requests = anthropic.requests();
    assert_eq!(requests.len(), 1, "{:?}", anthropic.rejections());
    let messages = requests[0]["messages"].as_array().unwrap();
    let call = &messages[messages.len() - 2]["content"][0];
    let result = &messages[messages.len() - 1]["content"][0];
    assert_eq!(call["type"], "tool_use");
    let id = call["id"].as_str().unwrap();
    assert!(id.starts_with("gc_") && !id.contains('.'), "{id}");
    assert_eq!(result["tool_use_id"], id);
    assert!(result["content"].as_str().unwrap().contains("mango"));
}
