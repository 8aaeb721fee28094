//! The tools `switchboard mcp` offers, their input schemas, and reading a
//! call's arguments into typed requests (with a clear error for a bad one).

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// Longest text a notice or question may carry (Telegram's message limit
/// minus room for the header).
pub const MAX_TEXT: usize = 3_500;
/// Longest approval action line.
pub const MAX_ACTION: usize = 300;
/// Longest client request id.
pub const MAX_REQUEST_ID: usize = 200;
/// Bounds of a client's `timeout_secs`.
pub const MIN_TIMEOUT_SECS: u64 = 10;
pub const MAX_TIMEOUT_SECS: u64 = 86_400;
/// Rows a read-only listing returns at most.
pub const MAX_LIST: u32 = 100;

/// A call, its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    Notify {
        text: String,
        request_id: Option<String>,
    },
    RequestApproval {
        action: String,
        details: String,
        timeout: Option<Duration>,
        request_id: Option<String>,
    },
    Ask {
        question: String,
        timeout: Option<Duration>,
        request_id: Option<String>,
    },
    ListTasks {
        status: Option<String>,
        limit: u32,
    },
    RecentEvents {
        kind: Option<String>,
        limit: u32,
    },
}

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => Map::new(),
    })
}

fn request_id_schema() -> Value {
    json!({"type": "string", "maxLength": MAX_REQUEST_ID,
           "description": "Your id for this request: asking again with the same id (after a restart, say) returns the first request's outcome instead of posting again."})
}

fn timeout_schema(what: &str) -> Value {
    json!({"type": "integer", "minimum": MIN_TIMEOUT_SECS, "maximum": MAX_TIMEOUT_SECS,
           "description": format!("How long to wait for {what}, in seconds.")})
}

/// Every tool, as listed to clients.
pub fn list() -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true).destructive(false);
    vec![
        Tool::new(
            "notify",
            "Post a message to the operator's chat (configured by the operator; you cannot choose it). Returns once the gateway has posted it.",
            schema(json!({"type": "object", "required": ["text"], "additionalProperties": false, "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT, "description": "The message (Markdown)."},
                "request_id": request_id_schema(),
            }})),
        ),
        Tool::new(
            "request_approval",
            "Ask a person in the operator's chat to approve an action: an Approve/Deny card is posted and this call returns the decision and who took it (or `expired`). Only the gateway's configured approvers can decide.",
            schema(json!({"type": "object", "required": ["action"], "additionalProperties": false, "properties": {
                "action": {"type": "string", "minLength": 1, "maxLength": MAX_ACTION, "description": "What you want to do, in one line."},
                "details": {"type": "string", "maxLength": MAX_TEXT, "description": "Exact details the person should see (command, diff, amounts)."},
                "timeout_secs": timeout_schema("a decision (default: the gateway's APPROVAL_TIMEOUT)"),
                "request_id": request_id_schema(),
            }})),
        ),
        Tool::new(
            "ask",
            "Ask a person in the operator's chat a question and return their reply (a reply to the question's message answers it), or `expired`.",
            schema(json!({"type": "object", "required": ["question"], "additionalProperties": false, "properties": {
                "question": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
                "timeout_secs": timeout_schema("an answer (default 600)"),
                "request_id": request_id_schema(),
            }})),
        ),
        Tool::new(
            "list_tasks",
            "List the gateway's background tasks, newest first (read-only).",
            schema(json!({"type": "object", "additionalProperties": false, "properties": {
                "status": {"type": "string", "enum": ["queued", "running", "succeeded", "failed", "cancelled", "interrupted"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIST},
            }})),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "recent_events",
            "List the gateway's recent audit events, newest first (read-only).",
            schema(json!({"type": "object", "additionalProperties": false, "properties": {
                "kind": {"type": "string", "maxLength": 100, "description": "Only events whose kind starts with this, e.g. `approval.`."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIST},
            }})),
        )
        .with_annotations(read_only),
    ]
}

/// Reads a call of `name` with `args`; `Err` says what is wrong with it.
pub fn parse(name: &str, args: &JsonObject) -> Result<Call, String> {
    let known: &[&str] = match name {
        "notify" => &["text", "request_id"],
        "request_approval" => &["action", "details", "timeout_secs", "request_id"],
        "ask" => &["question", "timeout_secs", "request_id"],
        "list_tasks" => &["status", "limit"],
        "recent_events" => &["kind", "limit"],
        other => return Err(format!("unknown tool {other:?}")),
    };
    if let Some(extra) = args.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("unknown argument {extra:?}"));
    }
    let request_id = optional_text(args, "request_id", MAX_REQUEST_ID)?;
    Ok(match name {
        "notify" => Call::Notify {
            text: text(args, "text", MAX_TEXT)?,
            request_id,
        },
        "request_approval" => Call::RequestApproval {
            action: text(args, "action", MAX_ACTION)?,
            details: optional_text(args, "details", MAX_TEXT)?.unwrap_or_default(),
            timeout: timeout(args)?,
            request_id,
        },
        "ask" => Call::Ask {
            question: text(args, "question", MAX_TEXT)?,
            timeout: timeout(args)?,
            request_id,
        },
        "list_tasks" => Call::ListTasks {
            status: optional_text(args, "status", 20)?,
            limit: limit(args)?,
        },
        _ => Call::RecentEvents {
            kind: optional_text(args, "kind", 100)?,
            limit: limit(args)?,
        },
    })
}

fn text(args: &JsonObject, key: &str, max: usize) -> Result<String, String> {
    optional_text(args, key, max)?
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| format!("{key} is required (a non-empty string)"))
}

fn optional_text(args: &JsonObject, key: &str, max: usize) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(format!("{key} is longer than {max} characters")),
        Some(_) => Err(format!("{key} must be a string")),
    }
}

fn timeout(args: &JsonObject) -> Result<Option<Duration>, String> {
    match args.get("timeout_secs") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(s) if (MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS).contains(&s) => {
                Ok(Some(Duration::from_secs(s)))
            }
            _ => Err(format!(
                "timeout_secs must be a whole number from {MIN_TIMEOUT_SECS} to {MAX_TIMEOUT_SECS}"
            )),
        },
    }
}

fn limit(args: &JsonObject) -> Result<u32, String> {
    match args.get("limit") {
        None | Some(Value::Null) => Ok(20),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_LIST).contains(n))
            .ok_or_else(|| format!("limit must be a whole number from 1 to {MAX_LIST}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn calls_parse_and_bad_arguments_say_what_is_wrong() {
        assert_eq!(
            parse("notify", &obj(json!({"text": "hi"}))),
            Ok(Call::Notify {
                text: "hi".into(),
                request_id: None
            })
        );
        let err = |name: &str, v: Value| parse(name, &obj(v)).unwrap_err();
        assert!(err("notify", json!({})).contains("text is required"));
        assert!(err("notify", json!({"text": "  "})).contains("text is required"));
        assert!(err("notify", json!({"text": 5})).contains("must be a string"));
        assert!(err("notify", json!({"text": "x", "to": "telegram:1"}))
            .contains("unknown argument \"to\""));
        assert!(err("notify", json!({"text": "x".repeat(MAX_TEXT + 1)})).contains("longer than"));
        assert!(err("ask", json!({"question": "q", "timeout_secs": 1})).contains("timeout_secs"));
        assert!(err("list_tasks", json!({"limit": 0})).contains("limit"));
        assert!(err("delete_everything", json!({})).contains("unknown tool"));
        assert_eq!(
            parse(
                "request_approval",
                &obj(json!({"action": "deploy", "timeout_secs": 60}))
            ),
            Ok(Call::RequestApproval {
                action: "deploy".into(),
                details: String::new(),
                timeout: Some(Duration::from_secs(60)),
                request_id: None
            })
        );
    }

    #[test]
    fn every_listed_tool_parses_with_its_required_arguments() {
        for tool in list() {
            let mut args = JsonObject::new();
            for key in tool
                .input_schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                args.insert(key.as_str().unwrap_or_default().to_owned(), json!("x"));
            }
            assert!(parse(&tool.name, &args).is_ok(), "{}", tool.name);
        }
    }
}
