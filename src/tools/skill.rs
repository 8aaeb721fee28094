//! `execute_skill`: the model expands a skill (listed by name and description
//! in this tool's description) into its instructions when it needs them.

use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::skills::SkillLibrary;
use serde_json::{json, Value};
use std::sync::Arc;

pub struct SkillTool {
    spec: ToolSpec,
    library: Arc<SkillLibrary>,
}

const DESCRIPTION: &str =
    "Get the instructions of a skill, then follow them. Use one when the user's request \
                           matches its description. Skills:\n";

impl SkillTool {
    pub fn new(library: Arc<SkillLibrary>) -> SkillTool {
        SkillTool {
            spec: ToolSpec {
                name: "execute_skill".into(),
                display_name: "Use a skill".into(),
                description: DESCRIPTION.to_owned(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "description": "the skill's name" },
                        "arguments": { "type": "string", "description": "the input the skill works on" }
                    },
                    "required": ["name"],
                    "additionalProperties": false
                }),
                concurrency_safe: true,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
            library,
        }
    }
}

#[async_trait::async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn description(&self) -> String {
        format!("{DESCRIPTION}{}", self.library.book().listing(""))
    }

    async fn call(&self, args: Value, _ctx: &ToolContext) -> Result<String, ToolError> {
        let name = args
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArguments("`name` (a string) is required".into()))?;
        let input = args.get("arguments").and_then(Value::as_str).unwrap_or("");
        let book = self.library.book();
        let skill = book.get(name.trim()).ok_or_else(|| {
            let known: Vec<&str> = book.iter().map(|s| s.name.as_str()).collect();
            ToolError::InvalidArguments(format!(
                "no skill {name:?}; the skills are: {}",
                known.join(", ")
            ))
        })?;
        Ok(format!(
            "Instructions of the skill {} (follow them now):\n<skill name=\"{}\">\n{}\n</skill>",
            skill.name,
            skill.name,
            skill.expand(input)
        ))
    }
}
