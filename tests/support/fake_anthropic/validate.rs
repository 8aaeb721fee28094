//! Request validation of the fake Anthropic API, mirroring the real API's 400s.

use serde_json::{Map, Value};

/// Most `cache_control` breakpoints a request may carry.
const MAX_BREAKPOINTS: usize = 4;

type Checked = Result<(), String>;

/// The checks the real API makes that our client could get wrong.
pub(super) fn validate(request: &Value) -> Checked {
    let Some(body) = request.as_object() else {
        return Err("The request body must be a JSON object.".to_owned());
    };
    if body
        .get("model")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err("model: Field required".to_owned());
    }
    match body.get("max_tokens") {
        None => return Err("max_tokens: Field required".to_owned()),
        Some(n) if n.as_u64().is_some_and(|n| n > 0) => {}
        Some(other) => {
            return Err(format!(
                "max_tokens: Input should be a positive integer (got {other})"
            ))
        }
    }
    if body.get("stream") != Some(&Value::Bool(true)) {
        return Err(
            "fake Anthropic: only streaming is supported; 'stream' must be true.".to_owned(),
        );
    }
    let thinking = check_thinking(body)?;
    let mut breakpoints = 0;
    if let Some(system) = body.get("system") {
        check_system(system, &mut breakpoints)?;
    }
    check_tools(body, &mut breakpoints)?;
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("messages: Field required".to_owned());
    };
    check_messages(messages, &mut breakpoints)?;
    if thinking {
        check_final_assistant_thinks(messages)?;
    }
    if breakpoints > MAX_BREAKPOINTS {
        return Err(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    Ok(())
}

fn check_system(system: &Value, breakpoints: &mut usize) -> Checked {
    match system {
        Value::String(text) if !text.trim().is_empty() => Ok(()),
        Value::Array(blocks) => blocks.iter().enumerate().try_for_each(|(i, block)| {
            let at = format!("system.{i}");
            check_cache_control(block, &at, breakpoints)?;
            if block["type"] != "text" {
                return Err(format!("{at}.type: Input should be 'text'"));
            }
            check_text(block, &at)
        }),
        _ => Err("system: text content blocks must be non-empty".to_owned()),
    }
}

fn check_tools(body: &Map<String, Value>, breakpoints: &mut usize) -> Checked {
    let Some(tools) = body.get("tools") else {
        if body.contains_key("tool_choice") {
            return Err("tool_choice may only be specified while providing tools.".to_owned());
        }
        return Ok(());
    };
    let Some(tools) = tools.as_array() else {
        return Err("tools: Input should be a valid list".to_owned());
    };
    let mut names = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        check_cache_control(tool, &format!("tools.{i}"), breakpoints)?;
        let name = tool["name"].as_str().unwrap_or_default();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!(
                "tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            ));
        }
        if names.contains(&name) {
            return Err(format!(
                "tools: Tool names must be unique (duplicate {name:?})."
            ));
        }
        names.push(name);
        if tool["input_schema"]["type"] != "object" {
            return Err(format!(
                "tools.{i}.input_schema: Input schema must have type 'object'"
            ));
        }
        if let Some(description) = tool.get("description") {
            if !description.is_string() {
                return Err(format!(
                    "tools.{i}.description: Input should be a valid string"
                ));
            }
        }
    }
    if let Some(choice) = body.get("tool_choice") {
        if !matches!(
            choice["type"].as_str(),
            Some("auto" | "any" | "tool" | "none")
        ) {
            return Err(
                "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'".to_owned(),
            );
        }
    }
    Ok(())
}

fn check_messages(messages: &[Value], breakpoints: &mut usize) -> Checked {
    if messages.is_empty() {
        return Err("messages: at least one message is required".to_owned());
    }
    // `tool_use` ids of the previous assistant message, to be answered next.
    let mut pending: Vec<String> = Vec::new();
    let mut seen_ids: Vec<String> = Vec::new();
    let mut previous_role = "";
    for (i, message) in messages.iter().enumerate() {
        let at = format!("messages.{i}");
        let role = message["role"].as_str().unwrap_or_default();
        match role {
            "user" | "assistant" => {}
            "system" => return Err(format!("{at}.role: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.")),
            other => return Err(format!("{at}.role: Input should be 'user' or 'assistant' (got {other:?})")),
        }
        if i == 0 && role != "user" {
            return Err("messages: first message must use the \"user\" role".to_owned());
        }
        if role == previous_role {
            return Err(format!("messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"{role}\" roles in a row (at {at})"));
        }
        previous_role = role;
        let blocks = content_blocks(&message["content"], &at)?;
        let mut answered: Vec<String> = Vec::new();
        let mut seen_other_block = false;
        for (j, block) in blocks.iter().enumerate() {
            let at = format!("{at}.content.{j}");
            check_cache_control(block, &at, breakpoints)?;
            match (role, block["type"].as_str().unwrap_or_default()) {
                ("assistant", kind @ ("thinking" | "redacted_thinking")) => {
                    if block.get("cache_control").is_some() {
                        return Err(format!(
                            "{at}: cache_control cannot be set on {kind} blocks"
                        ));
                    }
                    check_signed(block, &at)?;
                }
                (_, "text") => {
                    check_text(block, &at)?;
                    seen_other_block = true;
                }
                ("user", "image") => {
                    check_image(block, &at)?;
                    seen_other_block = true;
                }
                ("assistant", "tool_use") => check_tool_use(block, &at, &mut seen_ids)?,
                ("user", "tool_result") => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if !pending.iter().any(|p| p == id) {
                        return Err(format!("{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."));
                    }
                    if seen_other_block {
                        return Err(format!("{at}: tool_result blocks must come first in the content of a user message, before any other blocks"));
                    }
                    check_tool_result_content(block, &at)?;
                    answered.push(id.to_owned());
                }
                (_, kind) => {
                    return Err(format!(
                        "{at}.type: unexpected block type {kind:?} in a {role} message"
                    ))
                }
            }
        }
        let missing: Vec<&String> = pending.iter().filter(|p| !answered.contains(p)).collect();
        if !missing.is_empty() {
            return Err(format!("messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing:?}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i - 1));
        }
        pending = if role == "assistant" {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str().map(str::to_owned))
                .collect()
        } else {
            Vec::new()
        };
    }
    if !pending.is_empty() {
        return Err(format!("messages: `tool_use` ids were found without `tool_result` blocks immediately after: {pending:?}"));
    }
    Ok(())
}

/// `thinking`: `{"type": "enabled", "budget_tokens": n}` with 1,024 ≤ n <
/// `max_tokens`, or `{"type": "disabled"}`; thinking cannot go with a forced
/// tool. Returns whether thinking is on.
fn check_thinking(body: &Map<String, Value>) -> Result<bool, String> {
    let Some(thinking) = body.get("thinking") else {
        return Ok(false);
    };
    match thinking["type"].as_str() {
        Some("disabled") => return Ok(false),
        Some("enabled") => {}
        _ => return Err("thinking.type: Input should be 'enabled' or 'disabled'".to_owned()),
    }
    let Some(budget) = thinking["budget_tokens"].as_u64() else {
        return Err("thinking.enabled.budget_tokens: Field required".to_owned());
    };
    if budget < 1024 {
        return Err(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                .to_owned(),
        );
    }
    if body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .is_some_and(|max| max <= budget)
    {
        return Err("`max_tokens` must be greater than `thinking.budget_tokens`".to_owned());
    }
    let forced = body
        .get("tool_choice")
        .and_then(|c| c["type"].as_str())
        .is_some_and(|t| matches!(t, "any" | "tool"));
    if forced {
        return Err("Thinking may not be enabled when tool_choice forces tool use.".to_owned());
    }
    Ok(true)
}

/// A thinking block must come back exactly as issued: its text under its
/// signature, or the redacted data the fake made.
fn check_signed(block: &Value, at: &str) -> Checked {
    let intact = match block["type"].as_str() {
        Some("thinking") => match (block["thinking"].as_str(), block["signature"].as_str()) {
            (Some(thinking), Some(signature)) => signature == super::reply::signature(thinking),
            _ => {
                return Err(format!(
                    "{at}: thinking blocks need `thinking` and `signature`"
                ))
            }
        },
        _ => block["data"]
            .as_str()
            .is_some_and(super::reply::is_redacted_data),
    };
    if intact {
        Ok(())
    } else {
        Err(format!("{at}: Invalid `signature` in `thinking` block"))
    }
}

/// With thinking on, the final assistant message, when it calls tools after
/// the last user text, must start with its thinking.
fn check_final_assistant_thinks(messages: &[Value]) -> Checked {
    let user_text = |m: &Value| {
        m["role"] == "user"
            && match &m["content"] {
                Value::Array(blocks) => blocks.iter().any(|b| b["type"] != "tool_result"),
                _ => true,
            }
    };
    let loop_start = messages.iter().rposition(user_text).map_or(0, |i| i + 1);
    let Some((i, last)) = messages
        .iter()
        .enumerate()
        .skip(loop_start)
        .rfind(|(_, m)| m["role"] == "assistant")
    else {
        return Ok(());
    };
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    if !blocks.iter().any(|b| b["type"] == "tool_use") {
        return Ok(());
    }
    let first = blocks[0]["type"].as_str().unwrap_or_default();
    if matches!(first, "thinking" | "redacted_thinking") {
        return Ok(());
    }
    Err(format!("messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`."))
}

/// A string content is one text block; it must be non-blank like any text.
fn content_blocks(content: &Value, at: &str) -> Result<Vec<Value>, String> {
    match content {
        Value::String(text) if !text.trim().is_empty() => {
            Ok(vec![serde_json::json!({"type": "text", "text": text})])
        }
        Value::Array(blocks) if !blocks.is_empty() => Ok(blocks.clone()),
        Value::String(_) | Value::Array(_) => {
            Err(format!("{at}: all messages must have non-empty content"))
        }
        _ => Err(format!(
            "{at}.content: Input should be a valid string or list"
        )),
    }
}

fn check_text(block: &Value, at: &str) -> Checked {
    match block["text"].as_str() {
        Some(text) if !text.trim().is_empty() => Ok(()),
        Some(_) => Err(format!(
            "{at}: text content blocks must contain non-whitespace text"
        )),
        None => Err(format!("{at}.text: Field required")),
    }
}

fn check_tool_use(block: &Value, at: &str, seen_ids: &mut Vec<String>) -> Checked {
    let id = block["id"].as_str().unwrap_or_default();
    if id.is_empty() || block["name"].as_str().is_none_or(str::is_empty) {
        return Err(format!("{at}: tool_use blocks need `id` and `name`"));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "{at}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
        ));
    }
    if seen_ids.iter().any(|s| s == id) {
        return Err(format!("{at}: `tool_use` ids must be unique ({id})"));
    }
    seen_ids.push(id.to_owned());
    if !block["input"].is_object() {
        return Err(format!("{at}.input: Input should be a valid dictionary"));
    }
    Ok(())
}

fn check_tool_result_content(block: &Value, at: &str) -> Checked {
    match block.get("content") {
        None => Ok(()),
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) => parts.iter().enumerate().try_for_each(|(k, part)| {
            let at = format!("{at}.content.{k}");
            match part["type"].as_str().unwrap_or_default() {
                "text" => check_text(part, &at),
                "image" => check_image(part, &at),
                other => Err(format!(
                    "{at}.type: Input tag '{other}' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'"
                )),
            }
        }),
        Some(_) => Err(format!(
            "{at}.content: Input should be a valid string or list"
        )),
    }
}

fn check_cache_control(block: &Value, at: &str, breakpoints: &mut usize) -> Checked {
    let Some(control) = block.get("cache_control") else {
        return Ok(());
    };
    if control["type"] != "ephemeral" {
        return Err(format!(
            "{at}.cache_control.type: Input should be 'ephemeral'"
        ));
    }
    *breakpoints += 1;
    Ok(())
}

/// An image block as the Messages API checks it (base64 source only here).
fn check_image(block: &Value, at: &str) -> Checked {
    let source = &block["source"];
    if source["type"] != "base64" {
        return Err(format!("{at}.image.source: Input tag '{}' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'", source["type"].as_str().unwrap_or_default()));
    }
    let at = format!("{at}.image.source.base64");
    let media_type = source["media_type"].as_str().unwrap_or_default();
    if !crate::support::images::ACCEPTED.contains(&media_type) {
        return Err(format!("{at}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"));
    }
    let Some(data) = source.get("data").and_then(Value::as_str) else {
        return Err(format!("{at}.data: Field required"));
    };
    let Some(bytes) = crate::support::images::decode(data) else {
        return Err(format!("{at}.data: Invalid base64 data"));
    };
    match crate::support::images::kind(&bytes) {
        Some(real) if real == media_type => Ok(()),
        Some(real) => Err(format!("{at}: The image was specified using the {media_type} media type, but the image appears to be a {real} image")),
        None => Err(format!("{at}: Could not process image")),
    }
}
