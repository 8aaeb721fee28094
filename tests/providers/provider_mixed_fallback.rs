//! A fallback of another protocol continues a turn the primary started: Gemini
//! signs its tool call (the signature rides in the call id), then fails; the
//! Anthropic fallback gets the same conversation — with ids it accepts — and
//! answers. Both fakes are as strict as the real APIs about call ids. And
//! Anthropic's thinking does not follow the turn to an OpenAI-compatible
//! fallback as `reasoning_content`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::e2e::Harness;
use support::fake_anthropic::{FakeAnthropic, Reply as AnthropicReply};
use support::fake_gemini::{FakeGemini, Reply as GeminiReply};
use support::fake_llm::{FakeLlm, Reply};

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

#[tokio::test]
async fn a_gemini_fallback_accepts_a_call_another_model_made() {
    let anthropic = FakeAnthropic::start().await;
    let gemini = FakeGemini::start().await;
    // Gemini 3's rule: every function-call turn carries a signature.
    gemini.require_thought_signatures();
    let h = Harness::with(&[
        ("LLM_API", "anthropic"),
        ("LLM_BASE_URL", &anthropic.base_url()),
        ("LLM_MODEL", "claude-sonnet-4"),
        ("LLM_FALLBACK_1_API", "gemini"),
        ("LLM_FALLBACK_1_BASE_URL", &gemini.base_url()),
        ("LLM_FALLBACK_1_MODEL", "gemini-3-pro"),
    ])
    .await;
    h.write("a.txt", "the secret word is mango\n");
    anthropic.push(AnthropicReply::tool_uses([(
        "toolu_01",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    for _ in 0..3 {
        anthropic.push(AnthropicReply::status(
            529,
            "overloaded_error",
            "Overloaded",
        ));
    }
    gemini.push(GeminiReply::text("The word is mango."));

    h.channel.dm(1, "what is in a.txt?").await;
    h.wait_for("the fallback's answer", |l| {
        l.has_text("The word is mango.")
    })
    .await;
    h.idle().await;
    let requests = gemini.requests();
    assert_eq!(requests.len(), 1);
    let call = requests[0]["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap().clone())
        .find(|p| p.get("functionCall").is_some())
        .unwrap();
    assert_eq!(call["thoughtSignature"], "skip_thought_signature_validator");
}

#[tokio::test]
async fn anthropic_thinking_is_not_sent_to_an_openai_fallback_as_reasoning_content() {
    let anthropic = FakeAnthropic::start().await;
    let llm = FakeLlm::start().await;
    // A strict host: it refuses `reasoning_content` on messages.
    llm.reject_message_fields(&["reasoning_content"]);
    let llm_url = llm.base_url();
    let h = Harness::with_llm(
        &[
            ("LLM_API", "anthropic"),
            ("LLM_BASE_URL", &anthropic.base_url()),
            ("LLM_MODEL", "claude-sonnet-4"),
            ("LLM_THINKING_BUDGET", "2048"),
            ("LLM_FALLBACK_1_API", "openai"),
            ("LLM_FALLBACK_1_BASE_URL", &llm_url),
            ("LLM_FALLBACK_1_MODEL", "fake-model"),
        ],
        llm,
    )
    .await;
    h.write("a.txt", "the secret word is mango\n");
    anthropic.push(AnthropicReply::thinking_then_tool_uses(
        "The file will say. ",
        [("toolu_01", "read_file", json!({"path": "a.txt"}))],
    ));
    for _ in 0..3 {
        anthropic.push(AnthropicReply::status(
            529,
            "overloaded_error",
            "Overloaded",
        ));
    }
    h.llm.push(Reply::text("The word is mango."));

    h.channel.dm(1, "what is in a.txt?").await;
    h.wait_for("the fallback's answer", |l| {
        l.has_text("The word is mango.")
    })
    .await;
    h.idle().await;
    let requests = h.llm.requests().await;
    assert_eq!(requests.len(), 1, "sent once, and accepted");
    assert!(
        !requests[0].to_string().contains("reasoning_content"),
        "{:#}",
        requests[0]
    );
}
