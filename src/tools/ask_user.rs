//! `ask_user`: the model asks the user a question and the turn pauses for the answer.

use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use serde_json::{json, Value};

/// Posting the question is the runtime's job (it ends the turn with it); the
/// tool validates the call and tells the model to stop.
pub struct AskUserTool {
    spec: ToolSpec,
}

impl AskUserTool {
    pub fn new() -> AskUserTool {
        AskUserTool {
            spec: ToolSpec {
                name: "ask_user".into(),
                display_name: "Ask the user".into(),
                description: "Ask the user a question and wait for the answer. Use it when you need a decision, \
                              missing details, or consent before a risky action. The turn ends after this call; \
                              the user's next message is the answer."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "question": { "type": "string", "description": "The question, self-contained." } },
                    "required": ["question"],
                    "additionalProperties": false
                }),
                concurrency_safe: false,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
        }
    }
}

impl Default for AskUserTool {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait::async_trait]
impl Tool for AskUserTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        match args.get("question").and_then(Value::as_str) {
            Some(q) if !q.trim().is_empty() => {
                Ok("The question was shown to the user. Stop here; their reply arrives as the next message.".into())
            }
            _ => Err(ToolError::InvalidArguments("`question` must be a non-empty string".into())),
        }
    }
}
