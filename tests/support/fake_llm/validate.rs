//! Request validation of the fake LLM, mirroring the real API's 400s.

use serde_json::Value;

/// The checks the real API makes that our client could get wrong.
pub(super) fn validate(request: &Value) -> Result<(), String> {
    let Some(body) = request.as_object() else {
        return Err("The request body must be a JSON object.".to_owned());
    };
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("You must provide a model parameter.".to_owned());
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("Missing required parameter: 'messages'.".to_owned());
    };
    if messages.is_empty() {
        return Err("Invalid 'messages': empty array. Expected at least one message.".to_owned());
    }
    if body.get("stream") != Some(&Value::Bool(true)) {
        return Err("fake LLM: only streaming is supported; 'stream' must be true.".to_owned());
    }
    validate_tools(body.get("tools"), body.get("tool_choice"))?;
    validate_messages(messages)
}

fn validate_tools(tools: Option<&Value>, tool_choice: Option<&Value>) -> Result<(), String> {
    let Some(tools) = tools else {
        if tool_choice.is_some() {
            return Err("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.".to_owned());
        }
        return Ok(());
    };
    let Some(tools) = tools.as_array().filter(|t| !t.is_empty()) else {
        return Err("Invalid 'tools': expected a non-empty array.".to_owned());
    };
    for (i, tool) in tools.iter().enumerate() {
        let name = tool["function"]["name"].as_str().unwrap_or_default();
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if tool["type"] != "function" || !valid_name {
            return Err(format!("Invalid 'tools[{i}]': expected {{type: 'function', function: {{name: ^[a-zA-Z0-9_-]{{1,64}}$, …}}}}."));
        }
    }
    Ok(())
}

fn validate_messages(messages: &[Value]) -> Result<(), String> {
    let unanswered = |pending: &[String]| {
        format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", pending.join(", "))
    };
    let mut pending: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role != "tool" && !pending.is_empty() {
            return Err(unanswered(&pending));
        }
        let content = &message["content"];
        let has_text = content.is_string() || content.is_array();
        match role {
            "system" | "developer" | "user" if !has_text => {
                return Err(format!(
                    "Invalid 'messages[{i}].content': expected a string or an array."
                ));
            }
            "user" => check_parts(i, content)?,
            "system" | "developer" => {
                if content.to_string().contains("\"image_url\"") {
                    return Err(format!("Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but this message with role '{role}' contains an image URL."));
                }
            }
            "assistant" => {
                let calls = message["tool_calls"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                if !has_text && calls.is_empty() {
                    return Err(format!("Invalid 'messages[{i}]': an assistant message needs 'content' or 'tool_calls'."));
                }
                for call in calls {
                    let id = call["id"].as_str().unwrap_or_default();
                    if id.is_empty()
                        || call["type"] != "function"
                        || !call["function"]["name"].is_string()
                        || !call["function"]["arguments"].is_string()
                    {
                        return Err(format!("Invalid 'messages[{i}].tool_calls': each needs id, type 'function', function.name and function.arguments (a string)."));
                    }
                    if id.chars().count() > 40 {
                        return Err(format!("Invalid 'messages[{i}].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length {} instead.", id.chars().count()));
                    }
                    pending.push(id.to_owned());
                }
            }
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                let Some(position) = pending.iter().position(|p| p == id) else {
                    return Err(format!("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[{i}], tool_call_id {id:?})."));
                };
                pending.remove(position);
                if !content.is_string() && !content.is_array() {
                    return Err(format!(
                        "Invalid 'messages[{i}].content': expected a string."
                    ));
                }
                check_tool_parts(i, content)?;
            }
            other => {
                return Err(format!("Invalid value: '{other}' (messages[{i}].role). Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'."));
            }
        }
    }
    if pending.is_empty() {
        Ok(())
    } else {
        Err(unanswered(&pending))
    }
}

/// A user message's content parts, as strictly as the real API checks them.
fn check_parts(i: usize, content: &Value) -> Result<(), String> {
    let Some(parts) = content.as_array() else {
        return Ok(());
    };
    for (j, part) in parts.iter().enumerate() {
        match part["type"].as_str().unwrap_or_default() {
            "text" if part["text"].is_string() => {}
            "text" => return Err(format!("Invalid 'messages[{i}].content[{j}].text': expected a string.")),
            "image_url" => {
                let Some(url) = part["image_url"]["url"].as_str() else {
                    return Err(format!("Missing required parameter: 'messages[{i}].content[{j}].image_url.url'."));
                };
                check_data_url(i, j, url)?;
            }
            other => return Err(format!("Invalid value: '{other}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.")),
        }
    }
    Ok(())
}

/// A tool message's content parts: text only, as the real API takes them.
fn check_tool_parts(i: usize, content: &Value) -> Result<(), String> {
    if content.to_string().contains("\"image_url\"") {
        return Err(format!("Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL."));
    }
    for (j, part) in content.as_array().into_iter().flatten().enumerate() {
        if part["type"] != "text" || !part["text"].is_string() {
            return Err(format!("Invalid value: '{}'. Supported values are: 'text'. (messages[{i}].content[{j}].type)", part["type"].as_str().unwrap_or_default()));
        }
    }
    Ok(())
}

fn check_data_url(i: usize, j: usize, url: &str) -> Result<(), String> {
    if url.starts_with("https://") || url.starts_with("http://") {
        return Ok(());
    }
    let expected = "Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got";
    let at = format!("Invalid 'messages[{i}].content[{j}].image_url.url'");
    let Some((mime, data)) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
    else {
        return Err(format!("{at}: {expected} an invalid value."));
    };
    if !crate::support::images::ACCEPTED.contains(&mime) {
        return Err(format!("{at}: {expected} unsupported MIME type '{mime}'."));
    }
    let Some(bytes) = crate::support::images::decode(data) else {
        return Err(format!("{at}: {expected} an invalid value."));
    };
    if crate::support::images::kind(&bytes).is_none() {
        return Err("You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].".to_owned());
    }
    Ok(())
}
