//! Request bodies in Anthropic's Messages API format: alternating user/assistant
//! turns, tool results merged into the user turn after their `tool_use`, and the
//! sliding prompt-cache breakpoints.
//!
//! Decisions (the API rejects what the neutral history can contain):
//! - `Role::System` messages inside the history become user text prefixed with
//!   [`SYSTEM_NOTE`], kept in place (folding them into `system` would move them and
//!   change the cached prefix on every turn).
//! - Tool arguments that are not a JSON object (invalid JSON, an array, …) go back
//!   as `{"_unparsed_arguments": "<raw text>"}`: `input` must be an object, and the
//!   model should see what it sent next to the error the runtime reported; empty
//!   arguments become `{}`.
//! - Blank text is dropped (the API rejects whitespace-only text blocks); a message
//!   left empty disappears and its neighbours merge.
//! - A tool result that answers no `tool_use` of the assistant turn right before it
//!   becomes user text; a `tool_use` without a result gets an error result.
//! - A history starting with the assistant gets [`PLACEHOLDER_USER`] first.
//! - Reasoning is sent back only as the signed blocks Anthropic issued, and
//!   only for the assistant turns of the current tool loop (after the last
//!   user text): the API drops earlier turns' thinking anyway. Extended
//!   thinking is requested only when the loop's last assistant turn with
//!   `tool_use` starts with its signed thinking — a turn another provider
//!   began (fallback) has none, and the API would refuse it.

use serde_json::{json, Map, Value};

use crate::llm::types::{
    portable_call_id, ChatRequest, Message, Role, SignedReasoning, ToolCall, ToolDefinition,
};

/// User text put first when the history does not start with a user message.
pub(super) const PLACEHOLDER_USER: &str = "[earlier conversation omitted]";
/// Prefix of a `Role::System` message sent as user text.
pub(super) const SYSTEM_NOTE: &str = "[system note]";
/// Result given to a `tool_use` the history has no result for.
const MISSING_RESULT: &str = "error: no result was recorded for this tool call";

/// The JSON body of a streaming `POST /messages` request; `thinking` is the
/// extended-thinking budget, when on.
pub(super) fn request_body(
    model: &str,
    max_tokens: u32,
    thinking: Option<u32>,
    request: &ChatRequest,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(model));
    body.insert("max_tokens".into(), Value::from(max_tokens));
    body.insert("stream".into(), Value::Bool(true));
    let loop_start = current_loop_start(&request.messages);
    if let Some(budget) = thinking.filter(|_| can_think(&request.messages[loop_start..])) {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    if !request.system.trim().is_empty() {
        // Breakpoint 1: tools + system are the same on every call.
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system, "cache_control": ephemeral()}]),
        );
    }
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(request.tools.iter().map(tool).collect()),
        );
        body.insert("tool_choice".into(), json!({"type": "auto"}));
    }
    body.insert("messages".into(), messages(&request.messages, loop_start));
    Value::Object(body)
}

/// Where the current tool loop starts: right after the last user text (a
/// system note counts: it is user text on the wire).
fn current_loop_start(history: &[Message]) -> usize {
    history
        .iter()
        .rposition(|m| {
            matches!(m.role, Role::User | Role::System) && non_blank(&m.content).is_some()
        })
        .map_or(0, |i| i + 1)
}

/// Whether thinking may be on for a loop: its last assistant turn, if that
/// one called tools, carries its signed thinking.
fn can_think(current_loop: &[Message]) -> bool {
    current_loop
        .iter()
        .rfind(|m| m.role == Role::Assistant)
        .is_none_or(|m| m.tool_calls.is_empty() || !m.signed_reasoning.is_empty())
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Which side of the conversation a turn is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    User,
    Assistant,
}

#[derive(Debug)]
struct Turn {
    side: Side,
    blocks: Vec<Value>,
}

/// The `messages` array: valid for the API whatever the history looks like.
/// Assistant turns from `loop_start` on carry their signed reasoning.
fn messages(history: &[Message], loop_start: usize) -> Value {
    let mut turns: Vec<Turn> = Vec::new();
    for (i, message) in history.iter().enumerate() {
        let (side, blocks) = blocks_of(message, i >= loop_start);
        push(&mut turns, side, blocks);
    }
    if turns.first().is_none_or(|t| t.side != Side::User) {
        turns.insert(
            0,
            Turn {
                side: Side::User,
                blocks: vec![text_block(PLACEHOLDER_USER)],
            },
        );
    }
    pair_tool_results(&mut turns);
    // Breakpoint 2 slides: the next call reads everything up to here from
    // cache. Thinking blocks cannot carry one.
    let cacheable = turns
        .last_mut()
        .and_then(|t| t.blocks.iter_mut().rev().find(|b| !is_reasoning(b)));
    if let Some(Value::Object(last)) = cacheable {
        last.insert("cache_control".into(), ephemeral());
    }
    let turns = turns.into_iter().map(|turn| {
        let role = match turn.side {
            Side::User => "user",
            Side::Assistant => "assistant",
        };
        json!({"role": role, "content": turn.blocks})
    });
    Value::Array(turns.collect())
}

/// Appends blocks, merging into the previous turn when it is on the same side.
/// A merged assistant turn keeps its reasoning blocks first: the API wants the
/// loop's last assistant turn to start with its thinking (a compacted history
/// puts the summary's acknowledgement right before a signed tool call).
fn push(turns: &mut Vec<Turn>, side: Side, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some(last) if last.side == side => {
            last.blocks.extend(blocks);
            if side == Side::Assistant {
                let (mut merged, rest): (Vec<Value>, Vec<Value>) =
                    last.blocks.drain(..).partition(is_reasoning);
                merged.extend(rest);
                last.blocks = merged;
            }
        }
        _ => turns.push(Turn { side, blocks }),
    }
}

/// A thinking or redacted thinking block.
fn is_reasoning(block: &Value) -> bool {
    matches!(
        block["type"].as_str(),
        Some("thinking" | "redacted_thinking")
    )
}

fn blocks_of(message: &Message, with_reasoning: bool) -> (Side, Vec<Value>) {
    let text = message.content.as_str();
    match message.role {
        Role::User => {
            let text = message.text_with_placeholders();
            let mut blocks: Vec<Value> = image_blocks(message);
            // Images first: Anthropic recommends them before the question.
            blocks.extend(non_blank(&text).map(text_block));
            (Side::User, blocks)
        }
        Role::System => (
            Side::User,
            non_blank(text)
                .map(|t| text_block(&format!("{SYSTEM_NOTE} {t}")))
                .into_iter()
                .collect(),
        ),
        Role::Assistant => {
            let mut blocks: Vec<Value> = if with_reasoning {
                message.signed_reasoning.iter().map(signed_block).collect()
            } else {
                Vec::new()
            };
            blocks.extend(non_blank(text).map(text_block));
            blocks.extend(message.tool_calls.iter().map(tool_use));
            (Side::Assistant, blocks)
        }
        Role::Tool => {
            let id = portable_call_id(message.tool_call_id.as_deref().unwrap_or_default());
            let text = message.text_with_placeholders();
            let images = image_blocks(message);
            let block = if images.is_empty() {
                tool_result(&id, &text)
            } else {
                // A result with images: its text, then its image blocks.
                let mut content: Vec<Value> =
                    non_blank(&text).map(text_block).into_iter().collect();
                content.extend(images);
                json!({"type": "tool_result", "tool_use_id": id, "content": content})
            };
            (Side::User, vec![block])
        }
    }
}

/// The loaded images of a message as base64 image blocks.
fn image_blocks(message: &Message) -> Vec<Value> {
    message
        .loaded_images()
        .map(|(image, data)| {
            json!({
                "type": "image",
                "source": {"type": "base64", "media_type": image.mime, "data": data},
            })
        })
        .collect()
}

/// A signed reasoning block exactly as the API issued it.
fn signed_block(block: &SignedReasoning) -> Value {
    match block {
        SignedReasoning::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        SignedReasoning::RedactedThinking { data } => {
            json!({"type": "redacted_thinking", "data": data})
        }
    }
}

fn non_blank(text: &str) -> Option<&str> {
    Some(text).filter(|t| !t.trim().is_empty())
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn tool_use(call: &ToolCall) -> Value {
    json!({"type": "tool_use", "id": portable_call_id(&call.id), "name": call.name, "input": tool_input(&call.arguments)})
}

/// The `input` object for a call's raw arguments (see the module docs).
pub(super) fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({"_unparsed_arguments": arguments}),
    }
}

fn tool_result(id: &str, content: &str) -> Value {
    let mut block = json!({"type": "tool_result", "tool_use_id": id});
    // An empty string is refused; a result without content is fine.
    if !content.is_empty() {
        block["content"] = Value::from(content);
    }
    block
}

/// Makes every `tool_use` answered by a `tool_result` at the start of the next
/// user turn, and every `tool_result` answer a `tool_use` right before it.
fn pair_tool_results(turns: &mut Vec<Turn>) {
    let mut i = 0;
    while i < turns.len() {
        if turns[i].side == Side::Assistant {
            let ids: Vec<String> = turns[i]
                .blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str().map(str::to_owned))
                .collect();
            if !ids.is_empty() && turns.get(i + 1).is_none() {
                turns.push(Turn {
                    side: Side::User,
                    blocks: Vec::new(),
                });
            }
            if let Some(next) = turns.get_mut(i + 1) {
                answer_calls(&mut next.blocks, &ids);
            }
            i += 2;
        } else {
            answer_calls(&mut turns[i].blocks, &[]);
            i += 1;
        }
    }
}

/// Rebuilds a user turn: results for `ids` first (in call order, missing ones
/// made up), then everything else, with stray results turned into text.
fn answer_calls(blocks: &mut Vec<Value>, ids: &[String]) {
    let mut results: Vec<Option<Value>> = vec![None; ids.len()];
    let mut rest = Vec::new();
    for block in blocks.drain(..) {
        if block["type"] != "tool_result" {
            rest.push(block);
            continue;
        }
        let id = block["tool_use_id"].as_str().unwrap_or_default();
        match ids.iter().position(|known| known == id) {
            Some(at) if results[at].is_none() => results[at] = Some(block),
            _ => rest.push(stray_result_text(&block)),
        }
    }
    for (slot, id) in results.iter_mut().zip(ids) {
        if slot.is_none() {
            let mut made_up = tool_result(id, MISSING_RESULT);
            made_up["is_error"] = Value::Bool(true);
            *slot = Some(made_up);
        }
    }
    blocks.extend(results.into_iter().flatten());
    blocks.extend(rest);
}

/// A result that answers no call, as user text (its images dropped: the
/// text notes them).
fn stray_result_text(block: &Value) -> Value {
    let id = block["tool_use_id"].as_str().unwrap_or_default();
    let content = match &block["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let content = if content.is_empty() {
        "(empty)"
    } else {
        &content
    };
    text_block(&format!("[result of tool call {id}]\n{content}"))
}

fn tool(tool: &ToolDefinition) -> Value {
    let schema = match &tool.parameters {
        Value::Object(schema) if schema.get("type").is_some_and(|t| t == "object") => {
            tool.parameters.clone()
        }
        _ => json!({"type": "object", "properties": {}}),
    };
    let mut out = json!({"name": tool.name, "input_schema": schema});
    if !tool.description.trim().is_empty() {
        out["description"] = Value::from(tool.description.as_str());
    }
    out
}

#[cfg(test)]
mod tests;
