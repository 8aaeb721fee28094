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
    let body = request_body("claude", 1024, &request(vec![Message::user("hi")], vec![]));
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
    let body = request_body("m", 10, &request(history, tools));
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
    let body = request_body("m", 10, &request(history, vec![]));
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
    let body = request_body("m", 10, &req);
    assert!(body.get("system").is_none());
    assert_eq!(
        body["tools"],
        json!([{"name": "t", "input_schema": {"type": "object", "properties": {}}}])
    );
    assert_eq!(tool_input("42"), json!({"_unparsed_arguments": "42"}));
    assert_eq!(tool_input(" "), json!({}));
}
