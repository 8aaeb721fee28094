//! Request bodies in Gemini's `generateContent` wire format: contents with
//! alternating `user` / `model` roles, function calls and responses, tools.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::call_id;
use super::schema;
use crate::llm::types::{ChatRequest, Message, Role, ToolCall, ToolDefinition};

/// Which optional generation settings to send (the endpoint may have rejected some).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RequestOptions {
    pub(crate) frequency_penalty: Option<f32>,
    pub(crate) max_output_tokens: Option<u32>,
    /// `thinkingConfig.includeThoughts` (models without thinking reject it).
    pub(crate) include_thoughts: bool,
    /// `thinkingConfig.thinkingBudget`, sent along with `includeThoughts`.
    pub(crate) thinking_budget: Option<u32>,
}

/// The JSON body of a `streamGenerateContent` request.
pub(crate) fn request_body(request: &ChatRequest, options: &RequestOptions) -> Value {
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents(&request.messages)));
    if !request.system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": request.system}]}),
        );
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": {"mode": "AUTO"}}),
        );
    }
    let mut generation = Map::new();
    if let Some(max) = options.max_output_tokens {
        generation.insert("maxOutputTokens".into(), Value::from(max));
    }
    if let Some(penalty) = options.frequency_penalty {
        generation.insert("frequencyPenalty".into(), Value::from(penalty));
    }
    if options.include_thoughts {
        let mut thinking = json!({"includeThoughts": true});
        if let Some(budget) = options.thinking_budget {
            thinking["thinkingBudget"] = Value::from(budget);
        }
        generation.insert("thinkingConfig".into(), thinking);
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

fn declaration(tool: &ToolDefinition) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), Value::from(tool.name.as_str()));
    out.insert("description".into(), Value::from(tool.description.as_str()));
    if let Some(parameters) = schema::function_parameters(&tool.parameters) {
        out.insert("parameters".into(), parameters);
    }
    Value::Object(out)
}

/// The conversation as contents: system notes and tool results become `user`
/// parts, assistant turns `model` parts, consecutive same-role turns one content
/// (Gemini wants the function responses of a turn together, right after it);
/// the images of tool results follow the function responses as `inlineData`.
fn contents(messages: &[Message]) -> Vec<Value> {
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    // Images of the current run of tool results: they follow its function
    // responses in the same turn.
    let mut tool_images: Vec<Value> = Vec::new();
    for message in messages {
        if message.role != Role::Tool && !tool_images.is_empty() {
            if let Some((_, parts)) = out.last_mut() {
                parts.append(&mut tool_images);
            }
        }
        let (role, parts) = match message.role {
            Role::User => {
                let mut parts = text_part(&message.text_with_placeholders());
                parts.extend(inline_images(message));
                ("user", parts)
            }
            Role::System => ("user", text_part(&message.content)),
            Role::Assistant => {
                let mut parts = text_part(&message.content);
                for call in &message.tool_calls {
                    call_names.insert(call.id.as_str(), call.name.as_str());
                    parts.push(function_call(call));
                }
                ("model", parts)
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                let content = message.text_with_placeholders();
                let part = match call_names.get(id) {
                    Some(name) => function_response(id, name, &content),
                    // A result without its call (cut history) cannot be a
                    // functionResponse: Gemini pairs them strictly.
                    None => json!({"text": format!("[tool result] {content}")}),
                };
                tool_images.extend(inline_images(message));
                ("user", vec![part])
            }
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => out.push((role, parts)),
        }
    }
    if let Some((_, parts)) = out.last_mut() {
        parts.append(&mut tool_images);
    }
    out.into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect()
}

/// The loaded images of a message as `inlineData` parts.
fn inline_images(message: &Message) -> impl Iterator<Item = Value> + '_ {
    message
        .loaded_images()
        .map(|(image, data)| json!({"inlineData": {"mimeType": image.mime, "data": data}}))
}

fn text_part(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({ "text": text })]
    }
}

/// A `functionCall` part with the id and `thoughtSignature` carried in our id.
fn function_call(call: &ToolCall) -> Value {
    let decoded = call_id::decode(&call.id);
    let mut function = Map::new();
    function.insert("name".into(), Value::from(call.name.as_str()));
    function.insert("args".into(), arguments(&call.arguments));
    if let Some(id) = decoded.gemini_id {
        function.insert("id".into(), Value::from(id));
    }
    let mut part = Map::new();
    part.insert("functionCall".into(), Value::Object(function));
    let signature = match decoded.signature {
        Some(signature) => Some(signature),
        None if decoded.foreign => Some(call_id::FOREIGN_SIGNATURE),
        None => None,
    };
    if let Some(signature) = signature {
        part.insert("thoughtSignature".into(), Value::from(signature));
    }
    Value::Object(part)
}

/// `args` must be an object: the arguments when they are one, `{}` when empty,
/// else the raw text under `_raw_arguments` (so the model sees what it sent; the
/// runtime already answered that call with an invalid-arguments error).
fn arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(args)) => Value::Object(args),
        _ => json!({ "_raw_arguments": raw }),
    }
}

/// A `functionResponse` part; `response` is the result when it is a JSON object,
/// else `{"result": <text>}`.
fn function_response(id: &str, name: &str, content: &str) -> Value {
    let response = match serde_json::from_str::<Value>(content) {
        Ok(Value::Object(object)) => Value::Object(object),
        _ => json!({ "result": content }),
    };
    let mut function = Map::new();
    function.insert("name".into(), Value::from(name));
    function.insert("response".into(), response);
    if let Some(gemini_id) = call_id::decode(id).gemini_id {
        function.insert("id".into(), Value::from(gemini_id));
    }
    json!({ "functionResponse": function })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: RequestOptions = RequestOptions {
        frequency_penalty: None,
        max_output_tokens: None,
        include_thoughts: false,
        thinking_budget: None,
    };

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn plain_request() {
        let request = ChatRequest {
            system: String::new(),
            messages: vec![Message::user("hi")],
            tools: vec![],
        };
        assert_eq!(
            request_body(&request, &NONE),
            json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        );
    }

    #[test]
    fn tool_images_follow_the_function_responses_in_the_same_turn() {
        let mut assistant = Message::assistant("");
        assistant.tool_calls = vec![call("gc_1", "shot", "{}"), call("gc_2", "ls", "{}")];
        let mut shot =
            Message::tool_result("gc_1", "[image result 1: image/png, 3 bytes — attached]");
        shot.images.push(crate::llm::Image {
            mime: "image/png".into(),
            hash: "ab".into(),
            width: 1,
            height: 1,
            data: Some("iVBO".into()),
        });
        let request = ChatRequest {
            system: String::new(),
            messages: vec![
                Message::user("hi"),
                assistant,
                shot,
                Message::tool_result("gc_2", "a b"),
            ],
            tools: vec![],
        };
        let body = request_body(&request, &NONE);
        assert_eq!(
            body["contents"][2],
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "shot",
                    "response": {"result": "[image result 1: image/png, 3 bytes — attached]"}}},
                {"functionResponse": {"name": "ls", "response": {"result": "a b"}}},
                {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
            ]})
        );
    }

    #[test]
    fn a_tool_round_pairs_calls_and_responses() {
        let mut assistant = Message::assistant("Looking.");
        assistant.tool_calls = vec![
            call("gc_1.c2ln", "read_file", r#"{"path":"a"}"#),
            call("fc-2.", "ls", "not json"),
        ];
        let request = ChatRequest {
            system: "be brief".into(),
            messages: vec![
                Message::user("hi"),
                assistant,
                Message::tool_result("gc_1.c2ln", "data"),
                Message::tool_result("fc-2.", r#"{"files": []}"#),
                Message::user("thanks"),
            ],
            tools: vec![ToolDefinition {
                name: "ls".into(),
                description: "lists".into(),
                parameters: json!({"type": "object", "properties": {}}),
            }],
        };
        let options = RequestOptions {
            frequency_penalty: Some(0.5),
            max_output_tokens: Some(100),
            include_thoughts: true,
            thinking_budget: Some(512),
        };
        let body = request_body(&request, &options);
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [
                    {"text": "Looking."},
                    {"functionCall": {"name": "read_file", "args": {"path": "a"}},
                     "thoughtSignature": "c2ln"},
                    {"functionCall": {"name": "ls", "id": "fc-2",
                        "args": {"_raw_arguments": "not json"}}},
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"result": "data"}}},
                    {"functionResponse": {"name": "ls", "id": "fc-2", "response": {"files": []}}},
                    {"text": "thanks"},
                ]},
            ])
        );
        assert_eq!(
            body["systemInstruction"],
            json!({"parts": [{"text": "be brief"}]})
        );
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [{"name": "ls", "description": "lists"}]}])
        );
        assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "AUTO");
        assert_eq!(
            body["generationConfig"],
            json!({"maxOutputTokens": 100, "frequencyPenalty": 0.5,
                   "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 512}})
        );
    }
}
