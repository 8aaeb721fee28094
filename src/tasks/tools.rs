//! `schedule` and `cancel_task`: future work on the user's behalf, and
//! stopping it — the tools over the task manager, kept with it.

use super::{first_occurrence, Cancelled, TaskManager};
use crate::store::{Admission, ScheduleRecord, Store};
use crate::tools::{Tool, ToolContext, ToolError, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Active schedules a conversation may have at once.
pub const MAX_SCHEDULES_PER_SESSION: usize = 20;

/// Creates schedules whose occurrences run a turn in this conversation.
pub struct ScheduleTool {
    spec: ToolSpec,
    store: Store,
    timezone: String,
    /// Active schedules one user may have across all chats and topics.
    per_user: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleArgs {
    kind: String,
    spec: String,
    prompt: String,
    #[serde(default)]
    missed: Option<String>,
}

impl ScheduleTool {
    pub fn new(store: Store, timezone: impl Into<String>) -> ScheduleTool {
        let timezone = timezone.into();
        ScheduleTool {
            spec: ToolSpec {
                name: "schedule".into(),
                display_name: "Schedule".into(),
                description: format!(
                    "Schedule work for later in this conversation. kind `at`: spec is an RFC 3339 time; `every`: spec is \
                     an interval in seconds (≥ 60); `cron`: a 5-field cron expression in the {timezone} time zone. When it \
                     fires you get `prompt` as a system notification and your answer is posted here. `missed` says what \
                     to do with an occurrence missed while the gateway was down: `run_once` (default) or `skip`."
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "kind": { "type": "string", "enum": ["at", "every", "cron"] },
                        "spec": { "type": "string" },
                        "prompt": { "type": "string", "description": "What to do when it fires." },
                        "missed": { "type": "string", "enum": ["run_once", "skip"] }
                    },
                    "required": ["kind", "spec", "prompt"],
                    "additionalProperties": false
                }),
                concurrency_safe: false,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
            store,
            timezone,
            per_user: crate::caps::DEFAULT_MAX_SCHEDULES_PER_USER,
        }
    }

    /// Caps the active schedules of one user across all their chats and
    /// topics (`MAX_SCHEDULES_PER_USER`).
    pub fn with_user_cap(mut self, per_user: usize) -> ScheduleTool {
        self.per_user = per_user.max(1);
        self
    }
}

#[async_trait::async_trait]
impl Tool for ScheduleTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: ScheduleArgs =
            serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let Some(origin) = ctx.origin.clone() else {
            return Err(ToolError::Forbidden(
                "schedules can only be created from a chat".into(),
            ));
        };
        let missed = args.missed.unwrap_or_else(|| "run_once".into());
        if !matches!(missed.as_str(), "run_once" | "skip") {
            return Err(ToolError::InvalidArguments(
                "`missed` must be run_once or skip".into(),
            ));
        }
        if args.prompt.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`prompt` must say what to do".into(),
            ));
        }
        let active = self
            .store
            .schedules()
            .of_session(&ctx.session_id)
            .await
            .map_err(|e| ToolError::Failed {
                message: "could not read the schedules".into(),
                diagnostics: Some(e.to_string()),
            })?;
        if active.len() >= MAX_SCHEDULES_PER_SESSION {
            return Err(ToolError::Forbidden(format!(
                "this conversation already has {MAX_SCHEDULES_PER_SESSION} active schedules; cancel one first"
            )));
        }
        let next = first_occurrence(&args.kind, &args.spec, &self.timezone)
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?
            .ok_or_else(|| ToolError::InvalidArguments("that time is in the past".into()))?;
        let record = ScheduleRecord {
            id: crate::domain::ScheduleId::new(),
            session_id: ctx.session_id.clone(),
            origin,
            kind: args.kind,
            spec: args.spec,
            timezone: self.timezone.clone(),
            prompt: args.prompt,
            missed,
            next_run_at: Some(next),
            last_fired_at: None,
            fired_count: 0,
            active: true,
        };
        let (platform, user) = (record.origin.key.platform, record.origin.key.user);
        let admitted = self
            .store
            .schedules()
            .insert_within_cap(&record, platform, user, self.per_user)
            .await
            .map_err(|e| ToolError::Failed {
                message: "could not store the schedule".into(),
                diagnostics: Some(e.to_string()),
            })?;
        if let Admission::Full(held) = admitted {
            return Err(ToolError::Forbidden(format!(
                "you already have {held} active schedules (the limit is {} per user, across all chats and topics); \
                 this one was not created. Cancel one first",
                self.per_user
            )));
        }
        let when = chrono::DateTime::from_timestamp_millis(next)
            .map(|t| t.to_rfc3339())
            .unwrap_or_default();
        Ok(json!({ "schedule_id": record.id, "next_run_at": when }).to_string())
    }
}

/// Cancels a running background task or an active schedule of this conversation.
pub struct CancelTaskTool {
    spec: ToolSpec,
    tasks: Arc<TaskManager>,
}

impl CancelTaskTool {
    pub fn new(tasks: Arc<TaskManager>) -> CancelTaskTool {
        CancelTaskTool {
            spec: ToolSpec {
                name: "cancel_task".into(),
                display_name: "Cancel task".into(),
                description: "Cancel a running background task or an active schedule of this conversation, by its id \
                              (or the first 8 characters of it)."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": { "task_id": { "type": "string" } },
                    "required": ["task_id"],
                    "additionalProperties": false
                }),
                concurrency_safe: false,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
            tasks,
        }
    }
}

#[async_trait::async_trait]
impl Tool for CancelTaskTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let id = args
            .get("task_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if id.len() < 6 {
            return Err(ToolError::InvalidArguments(
                "give the task or schedule id (at least 6 characters)".into(),
            ));
        }
        let cancelled = self
            .tasks
            .cancel_in_session(&ctx.session_id, &id)
            .await
            .map_err(|e| ToolError::Failed {
                message: "task store unavailable".into(),
                diagnostics: Some(e.to_string()),
            })?;
        match cancelled {
            Cancelled::Task(t) => Ok(format!("Cancelling task {t}.")),
            Cancelled::Requested(t) => Ok(format!(
                "Task {t} runs in another gateway process; it was asked to stop and will within a few seconds."
            )),
            Cancelled::NotRunning(t, status) => Ok(format!(
                "Task {t} is not running (status {}).",
                status.as_str()
            )),
            Cancelled::Schedule(s) => Ok(format!("Schedule {s} cancelled.")),
            Cancelled::NotFound => Err(ToolError::InvalidArguments(format!(
                "no running task or active schedule {id} in this conversation"
            ))),
        }
    }
}
