//! Unit tests of the Anthropic request body.

use serde_json::json;

use super::*;

fn request(messages: Vec<Message>, tools: Vec<ToolDefinition>) -> ChatRequest {
    ChatRequest {
        system: "be brief".into(),
        messages,
        tools,
    }
}

fn assistant_calls(text: &str, calls: &[(&str, &str)]) -> Message {
    let mut message = Message::assistant(text);
    message.tool_calls = calls
        .iter()
        .map(|(id, args)| ToolCall {
            id: (*id).into(),
            name: "read_file".into(),
            arguments: (*args).into(),
        })
        .collect();
    message
}

#[test]
fn plain_request() {
    let body = request_body(
        "claude",
        1024,
        None,
        &request(vec![Message::user("hi")], vec![]),
    );
    assert_eq!(
        body,
        json!({
            "model": "claude",
            "max_tokens": 1024,
            "stream": true,
            "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
            ]}],
        })
    );
}

#[test]
fn a_tool_round_merges_results_and_following_text() {
    let history = vec![
        Message::user("read both"),
        assistant_calls("Sure.", &[("t1", r#"{"path":"a"}"#), ("t2", "")]),
        Message::tool_result("t2", "B"),
        Message::tool_result("t1", "A"),
        Message::user("thanks"),
    ];
    let tools = vec![ToolDefinition {
        name: "read_file".into(),
        description: "reads".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let body = request_body("m", 10, None, &request(history, tools));
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "read both"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "read_file", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
                {"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
}

#[test]
fn odd_histories_are_made_valid() {
    let mut reasoning = assistant_calls("", &[("t1", "[1, 2")]);
    reasoning.reasoning = Some("secret thoughts".into());
    let history = vec![
        Message::assistant("Welcome!"),
        Message::system("be nice"),
        Message::user("   "),
        Message::tool_result("ghost", "old"),
        reasoning,
        Message::assistant(""),
    ];
    let body = request_body("m", 10, None, &request(history, vec![]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": PLACEHOLDER_USER}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Welcome!"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "[system note] be nice"},
                {"type": "text", "text": "[result of tool call ghost]\nold"},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "read_file",
                 "input": {"_unparsed_arguments": "[1, 2"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                 "content": MISSING_RESULT, "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
    assert!(!body.to_string().contains("secret thoughts"));
}

#[test]
fn empty_system_and_odd_schemas() {
    let mut req = request(
        vec![Message::user("x")],
        vec![ToolDefinition {
            name: "t".into(),
            description: String::new(),
            parameters: serde_json::Value::Null,
        }],
    );
    req.system = " ".into();
    let body = request_body("m", 10, None, &req);
    assert!(body.get("system").is_none());
    assert_eq!(
        body["tools"],
        json!([{"name": "t", "input_schema": {"type": "object", "properties": {}}}])
    );
    assert_eq!(tool_input("42"), json!({"_unparsed_arguments": "42"}));
    assert_eq!(tool_input(" "), json!({}));
}

fn signed(thinking: &str) -> SignedReasoning {
    SignedReasoning::Thinking {
        thinking: thinking.into(),
        signature: format!("sig-{thinking}"),
    }
}

#[test]
fn thinking_blocks_go_back_first_for_the_current_loop_only() {
    let mut old = assistant_calls("", &[("toolu_old", "{}")]);
    old.signed_reasoning = vec![signed("earlier")];
    let mut now = assistant_calls("Let me look.", &[("toolu_now", "{}")]);
    now.signed_reasoning = vec![
        signed("plan"),
        SignedReasoning::RedactedThinking {
            data: "opaque".into(),
        },
    ];
    let history = vec![
        Message::user("first question"),
        old,
        Message::tool_result("toolu_old", "a"),
        Message::assistant("first answer"),
        Message::user("second question"),
        now,
        Message::tool_result("toolu_now", "b"),
    ];
    let body = request_body("m", 10_000, Some(2048), &request(history, vec![]));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        messages[1]["content"][0]["type"], "tool_use",
        "an earlier turn's thinking is left out: {messages:#?}"
    );
    let current = &messages[5]["content"];
    assert_eq!(
        current[0],
        json!({"type": "thinking", "thinking": "plan", "signature": "sig-plan"})
    );
    assert_eq!(
        current[1],
        json!({"type": "redacted_thinking", "data": "opaque"})
    );
    assert_eq!(current[2]["type"], "text");
    assert_eq!(current[3]["type"], "tool_use");
}

#[test]
fn thinking_is_off_for_a_loop_another_provider_began() {
    // The fallback's tool call carries no signed thinking: the API would
    // refuse it with thinking on.
    let history = vec![
        Message::user("q"),
        assistant_calls("", &[("call_1", "{}")]),
        Message::tool_result("call_1", "r"),
    ];
    let body = request_body("m", 10_000, Some(2048), &request(history, vec![]));
    assert!(body.get("thinking").is_none(), "{body:#}");
    // A new question starts a new loop: thinking is back on.
    let body = request_body(
        "m",
        10_000,
        Some(2048),
        &request(vec![Message::user("next")], vec![]),
    );
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
}

#[test]
fn the_sliding_breakpoint_skips_thinking_blocks() {
    let mut last = assistant_calls("", &[]);
    last.signed_reasoning = vec![signed("only thinking")];
    last.content = "prefilled".into();
    let history = vec![Message::user("q"), last];
    let body = request_body("m", 10_000, Some(2048), &request(history, vec![]));
    let blocks = body["messages"][1]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(blocks[0].get("cache_control").is_none());
    assert_eq!(blocks[1]["cache_control"], json!({"type": "ephemeral"}));
}

#[test]
fn a_kept_tail_merged_into_the_summary_acknowledgement_still_starts_with_thinking() {
    // Compaction kept a tail that starts at a signed tool call; the summary's
    // acknowledgement before it is on the same side and is merged into it.
    let mut call = assistant_calls("", &[("toolu_1", "{}")]);
    call.signed_reasoning = vec![signed("plan")];
    let mut history = crate::agent::summary_messages("the user asked for a.txt").to_vec();
    history.extend([call, Message::tool_result("toolu_1", "A")]);
    let body = request_body("m", 10_000, Some(2048), &request(history, vec![]));
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    let kinds: Vec<&str> = messages[1]["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(kinds, ["thinking", "text", "tool_use"]);
}

fn with_loaded_image(mut message: Message) -> Message {
    message.images.push(crate::llm::Image {
        mime: "image/png".into(),
        hash: "ab".into(),
        width: 1,
        height: 1,
        data: Some("iVBO".into()),
    });
    message
}

#[test]
fn a_tool_results_images_go_inside_its_tool_result() {
    let history = vec![
        Message::user("shoot"),
        assistant_calls("", &[("toolu_1", "{}")]),
        with_loaded_image(Message::tool_result(
            "toolu_1",
            "[image result 1: image/png, 3 bytes — attached]",
        )),
    ];
    let body = request_body("claude", 1024, None, &request(history.clone(), vec![]));
    assert_eq!(
        body["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "cache_control": {"type": "ephemeral"},
        "content": [
            {"type": "text", "text": "[image result 1: image/png, 3 bytes — attached]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
        ]})
    );
    // Unloaded: the text with the placeholder, no image.
    let mut unloaded = history;
    unloaded[2].images[0].data = None;
    let body = request_body("claude", 1024, None, &request(unloaded.clone(), vec![]));
    let content = body["messages"][2]["content"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        content.ends_with("[image 1x1 sent earlier; no longer shown]"),
        "{content}"
    );
    // A result whose call is gone becomes text, its images dropped.
    let stray = vec![
        Message::user("hi"),
        with_loaded_image(Message::tool_result("toolu_9", "the note")),
    ];
    let body = request_body("claude", 1024, None, &request(stray, vec![]));
    assert_eq!(
        body["messages"][0]["content"][1]["text"],
        "[result of tool call toolu_9]\nthe note"
    );
}
