//! `check_background_tasks`: the session's background tasks, their progress and results.

use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::domain::TaskId;
use crate::store::Store;
use serde_json::{json, Value};

pub struct CheckTasksTool {
    spec: ToolSpec,
    store: Store,
}

impl CheckTasksTool {
    pub fn new(store: Store) -> CheckTasksTool {
        CheckTasksTool {
            store,
            spec: ToolSpec {
                name: "check_background_tasks".into(),
                display_name: "Check background tasks".into(),
                description: "List this conversation's background tasks with status, progress and (for finished \
                              ones) a result preview. Optionally pass a task_id for one task's full result."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "task_id": { "type": "string" } },
                    "additionalProperties": false
                }),
                concurrency_safe: true,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
        }
    }
}

#[async_trait::async_trait]
impl Tool for CheckTasksTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let failed = |e: crate::store::StoreError| ToolError::Failed {
            message: "task store unavailable".into(),
            diagnostics: Some(e.to_string()),
        };
        if let Some(id) = args.get("task_id").and_then(Value::as_str) {
            // Text that is no task id names no task of this conversation.
            let task = match id.parse::<TaskId>() {
                Ok(task) => self.store.tasks().get(&task).await.map_err(failed)?,
                Err(_) => None,
            };
            return match task {
                Some(t) if t.session_id == ctx.session_id => Ok(json!({
                    "task_id": t.id, "tool": t.tool_name, "status": t.status.as_str(), "stage": t.stage,
                    "detail": t.detail, "percent": t.percent, "result": t.result,
                })
                .to_string()),
                _ => Err(ToolError::InvalidArguments(format!("no task {id} in this conversation"))),
            };
        }
        let tasks = self
            .store
            .tasks()
            .of_session(&ctx.session_id, 20)
            .await
            .map_err(failed)?;
        if tasks.is_empty() {
            return Ok("No background tasks in this conversation.".into());
        }
        let list: Vec<Value> = tasks
            .iter()
            .map(|t| {
                json!({
                    "task_id": t.id, "tool": t.tool_name, "status": t.status.as_str(), "stage": t.stage,
                    "detail": t.detail, "percent": t.percent,
                    "result_preview": t.result.as_deref().map(|r| r.chars().take(300).collect::<String>()),
                })
            })
            .collect();
        Ok(Value::Array(list).to_string())
    }
}
