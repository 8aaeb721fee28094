//! Request bodies in the OpenAI chat-completions wire format.

use serde_json::{json, Map, Value};

use super::tool_images::{call_names, images_message};
use crate::llm::types::{portable_call_id, ChatRequest, Message, Role, ToolDefinition};

/// Which optional parameters to send (the endpoint may have rejected some).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RequestOptions {
    pub(crate) stream_options: bool,
    pub(crate) tool_choice: bool,
    pub(crate) frequency_penalty: Option<f32>,
    /// Send reasoning back as `reasoning_content` (where it belongs).
    pub(crate) reasoning_content: bool,
}

/// The JSON body of a streaming chat-completions request.
pub(crate) fn request_body(model: &str, request: &ChatRequest, options: &RequestOptions) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    // Reasoning goes back only within the current turn (the rounds after the
    // last user message), where thinking models with tools need it; earlier
    // turns' reasoning is dropped, as DeepSeek requires (400 otherwise).
    let current_turn = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .map_or(0, |i| i + 1);
    let names = call_names(&request.messages);
    let mut run_start = 0;
    for (i, m) in request.messages.iter().enumerate() {
        messages.push(message(m, options.reasoning_content && i >= current_turn));
        if m.role != Role::Tool {
            run_start = i + 1;
            continue;
        }
        // After the last of a run of tool results: their images.
        let run_ends = request
            .messages
            .get(i + 1)
            .is_none_or(|next| next.role != Role::Tool);
        if run_ends {
            messages.extend(images_message(&request.messages[run_start..=i], &names));
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), Value::Bool(true));
    if options.stream_options {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
        if options.tool_choice {
            body.insert("tool_choice".into(), Value::from("auto"));
        }
    }
    if let Some(penalty) = options.frequency_penalty {
        body.insert("frequency_penalty".into(), Value::from(penalty));
    }
    Value::Object(body)
}

fn message(message: &Message, with_reasoning: bool) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut out = Map::new();
    out.insert("role".into(), Value::from(role));
    let content = if message.role == Role::Assistant
        && message.content.is_empty()
        && !message.tool_calls.is_empty()
    {
        Value::Null
    } else if message.role == Role::User && message.loaded_images().next().is_some() {
        content_parts(message)
    } else {
        Value::from(message.text_with_placeholders().as_ref())
    };
    out.insert("content".into(), content);
    if message.role == Role::Assistant {
        if !message.tool_calls.is_empty() {
            let calls = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": portable_call_id(&call.id),
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
            out.insert("tool_calls".into(), Value::Array(calls));
        }
        // A message with Anthropic's signed thinking came from Anthropic: its
        // reasoning (kept by older versions) is not this protocol's to echo.
        if let Some(reasoning) = message
            .reasoning
            .as_deref()
            .filter(|r| with_reasoning && !r.is_empty() && message.signed_reasoning.is_empty())
        {
            out.insert("reasoning_content".into(), Value::from(reasoning));
        }
    }
    if message.role == Role::Tool {
        if let Some(id) = &message.tool_call_id {
            out.insert("tool_call_id".into(), Value::from(portable_call_id(id)));
        }
    }
    Value::Object(out)
}

/// A user message with images: a text part, then one `image_url` part per
/// image as a data URL (the only form every compatible endpoint accepts; a
/// local server cannot fetch our files).
fn content_parts(message: &Message) -> Value {
    let mut parts = Vec::new();
    let text = message.text_with_placeholders();
    if !text.is_empty() {
        parts.push(json!({"type": "text", "text": text}));
    }
    for (image, data) in message.loaded_images() {
        parts.push(json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{};base64,{data}", image.mime)},
        }));
    }
    Value::Array(parts)
}

fn tool(tool: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    const ALL: RequestOptions = RequestOptions {
        stream_options: true,
        tool_choice: true,
        frequency_penalty: None,
        reasoning_content: true,
    };

    fn request(messages: Vec<Message>, tools: Vec<ToolDefinition>) -> ChatRequest {
        ChatRequest {
            system: "be brief".into(),
            messages,
            tools,
        }
    }

    #[test]
    fn plain_request_has_system_first_and_no_tools() {
        let body = request_body("m", &request(vec![Message::user("hi")], vec![]), &ALL);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }

    #[test]
    fn tool_round_trip_shapes() {
        let mut assistant = Message::assistant("");
        assistant.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        }];
        assistant.reasoning = Some("think".into());
        let tools = vec![ToolDefinition {
            name: "read_file".into(),
            description: "reads".into(),
            parameters: json!({"type": "object"}),
        }];
        let req = request(
            vec![assistant, Message::tool_result("call_1", "data")],
            tools,
        );
        let options = RequestOptions {
            stream_options: false,
            frequency_penalty: Some(0.5),
            ..ALL
        };
        let body = request_body("m", &req, &options);
        assert_eq!(
            body["messages"][1],
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}],
                "reasoning_content": "think",
            })
        );
        assert_eq!(
            body["messages"][2],
            json!({"role": "tool", "content": "data", "tool_call_id": "call_1"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "read_file");
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["frequency_penalty"], 0.5);
        assert!(body.get("stream_options").is_none());
    }

    #[test]
    fn tool_images_follow_the_run_of_tool_messages_as_a_user_message() {
        let mut assistant = Message::assistant("");
        assistant.tool_calls = ["call_1", "call_2"]
            .map(|id| ToolCall {
                id: id.into(),
                name: "mcp_s_shot".into(),
                arguments: "{}".into(),
            })
            .to_vec();
        let mut shot =
            Message::tool_result("call_1", "[image result 1: image/png, 3 bytes — attached]");
        shot.images.push(crate::llm::Image {
            mime: "image/png".into(),
            hash: "ab".into(),
            width: 1,
            height: 1,
            data: Some("iVBO".into()),
        });
        let req = request(
            vec![
                Message::user("q"),
                assistant,
                shot,
                Message::tool_result("call_2", "plain"),
                Message::assistant("seen"),
            ],
            vec![],
        );
        let body = request_body("m", &req, &ALL);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages[3],
            json!({"role": "tool", "content": "[image result 1: image/png, 3 bytes — attached]",
                   "tool_call_id": "call_1"})
        );
        assert_eq!(messages[4]["role"], "tool");
        assert_eq!(
            messages[5],
            json!({"role": "user", "content": [
                {"type": "text", "text": "Images returned by mcp_s_shot:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            ]})
        );
        assert_eq!(messages[6]["role"], "assistant");
        // Not loaded (an old turn, a blind model): the placeholder only.
        let mut unloaded = req.clone();
        unloaded.messages[2].images[0].data = None;
        let body = request_body("m", &unloaded, &ALL);
        assert_eq!(body["messages"].as_array().unwrap().len(), 6);
        assert!(body["messages"][3]["content"]
            .as_str()
            .unwrap()
            .ends_with("[image 1x1 sent earlier; no longer shown]"));
    }

    #[test]
    fn reasoning_goes_back_only_where_it_belongs() {
        let mut mine = Message::assistant("");
        mine.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: "ls".into(),
            arguments: "{}".into(),
        }];
        mine.reasoning = Some("think".into());
        let mut anthropic = mine.clone();
        anthropic.tool_calls[0].id = "toolu_2".into();
        anthropic.signed_reasoning = vec![crate::llm::SignedReasoning::Thinking {
            thinking: "think".into(),
            signature: "sig".into(),
        }];
        let req = request(
            vec![
                Message::user("q"),
                mine,
                Message::tool_result("call_1", "a"),
                anthropic,
                Message::tool_result("toolu_2", "b"),
            ],
            vec![],
        );
        let body = request_body("m", &req, &ALL);
        assert_eq!(body["messages"][2]["reasoning_content"], "think");
        assert!(
            body["messages"][4].get("reasoning_content").is_none(),
            "Anthropic's thinking is not echoed: {body:#}"
        );
        let without = RequestOptions {
            reasoning_content: false,
            ..ALL
        };
        let body = request_body("m", &req, &without);
        assert!(!body.to_string().contains("reasoning_content"), "{body:#}");
    }
}
