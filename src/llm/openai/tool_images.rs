//! Images of tool results in the chat-completions format: a `tool` message
//! takes text only (an image part there is refused with a 400), so a run of
//! tool messages is followed by one `user` message carrying their images,
//! each group introduced by the tool that returned it.

use serde_json::{json, Value};
use std::collections::HashMap;

use crate::llm::types::{Message, Role};

/// The `user` message with the loaded images of the tool messages in `run`
/// (consecutive tool results); `None` when none has an image loaded.
/// `names` maps call ids to tool names.
pub(super) fn images_message(run: &[Message], names: &HashMap<&str, &str>) -> Option<Value> {
    let mut parts = Vec::new();
    for message in run.iter().filter(|m| m.role == Role::Tool) {
        let mut images = message.loaded_images().peekable();
        if images.peek().is_none() {
            continue;
        }
        let name = message
            .tool_call_id
            .as_deref()
            .and_then(|id| names.get(id))
            .copied()
            .unwrap_or("a tool");
        parts.push(json!({"type": "text", "text": format!("Images returned by {name}:")}));
        parts.extend(images.map(|(image, data)| {
            json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{};base64,{data}", image.mime)},
            })
        }));
    }
    (!parts.is_empty()).then(|| json!({"role": "user", "content": parts}))
}

/// Tool names by call id, from the assistant messages' calls.
pub(super) fn call_names(messages: &[Message]) -> HashMap<&str, &str> {
    messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect()
}
