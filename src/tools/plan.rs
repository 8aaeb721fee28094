//! `plan`: the agent's explicit plan for the calling session — create it,
//! mark a step done or failed, replan with a reason, show it. Kept in the
//! session's execution state (see `agent::plan`).

use super::args::parse_args;
use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::domain::plan::{Plan, PlanError, MAX_PLAN_STEPS};
use crate::memory::ExecutionState;
use crate::store::{SessionId, StateDoc, Store};
use serde::Deserialize;
use serde_json::{json, Value};

pub const NAME: &str = "plan";

/// The `plan` tool over the store.
pub struct PlanTool {
    store: Store,
    spec: ToolSpec,
}

impl PlanTool {
    pub fn new(store: Store) -> PlanTool {
        PlanTool {
            store,
            spec: ToolSpec {
                name: NAME.into(),
                display_name: "Plan".into(),
                description: format!(
                    "Keep an explicit plan for multi-step work in this conversation. action=create with a goal and \
                     steps (at most {MAX_PLAN_STEPS}) before work that takes several tool calls; action=done when a step \
                     finished (step: 1-based number, default the current step; note: its result); action=fail when a \
                     step failed (reason required); action=replan with a reason and the new remaining steps when the \
                     plan no longer fits (done steps are kept); action=show to read it. The current step is shown to \
                     you each round."
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["create", "done", "fail", "replan", "show"]},
                        "goal": {"type": "string", "description": "create: what the plan achieves"},
                        "steps": {"type": "array", "items": {"type": "string"}, "description": "create/replan: the steps in order"},
                        "step": {"type": "integer", "minimum": 1, "description": "done/fail: which step (default: the current one)"},
                        "note": {"type": "string", "description": "done: what came of it"},
                        "reason": {"type": "string", "description": "fail/replan: why"}
                    },
                    "required": ["action"],
                    "additionalProperties": false
                }),
                concurrency_safe: false,
                requires_approval: false,
                background: false,
            },
        }
    }

    async fn load(&self, session: &SessionId) -> Result<Option<ExecutionState>, ToolError> {
        let state = self
            .store
            .sessions()
            .state(session)
            .await
            .map_err(storage)?;
        Ok(state
            .execution_state
            .as_deref()
            .and_then(|j| serde_json::from_str::<ExecutionState>(j).ok()))
    }

    async fn save(&self, session: &SessionId, state: &ExecutionState) -> Result<(), ToolError> {
        let json = serde_json::to_string(state).map_err(storage)?;
        self.store
            .sessions()
            .set_doc(session, StateDoc::Execution, Some(&json))
            .await
            .map_err(storage)
    }
}

fn storage(e: impl std::fmt::Display) -> ToolError {
    ToolError::Failed {
        message: "the plan could not be read or saved".into(),
        diagnostics: Some(e.to_string()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    action: String,
    goal: Option<String>,
    #[serde(default)]
    steps: Vec<String>,
    step: Option<usize>,
    note: Option<String>,
    reason: Option<String>,
}

#[async_trait::async_trait]
impl Tool for PlanTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: PlanArgs = parse_args(NAME, args)?;
        let session = ctx.session_id.clone();
        let mut state = self.load(&session).await?;
        let invalid = |e: PlanError| ToolError::InvalidArguments(e.0);
        let no_plan =
            || ToolError::InvalidArguments("there is no plan yet: create one first".into());
        let reason = args.reason.as_deref().unwrap_or_default();
        let done = match args.action.as_str() {
            "create" => {
                let plan = Plan::create(args.goal.as_deref().unwrap_or_default(), &args.steps)
                    .map_err(invalid)?;
                match state.as_mut() {
                    Some(s) => s.plan = Some(plan),
                    None => state = Some(ExecutionState::with_plan(plan)),
                }
                "Plan created.".to_owned()
            }
            "done" | "fail" | "replan" => {
                let plan = state
                    .as_mut()
                    .and_then(|s| s.plan.as_mut())
                    .ok_or_else(no_plan)?;
                match args.action.as_str() {
                    "done" => {
                        let i = plan
                            .mark_done(args.step, args.note.as_deref())
                            .map_err(invalid)?;
                        format!("Step {} done.", i + 1)
                    }
                    "fail" => {
                        let i = plan.mark_failed(args.step, reason).map_err(invalid)?;
                        format!("Step {} marked failed.", i + 1)
                    }
                    _ => {
                        plan.replan(reason, &args.steps).map_err(invalid)?;
                        format!("Replanned (revision {}).", plan.revision)
                    }
                }
            }
            "show" => {
                let plan = state
                    .as_ref()
                    .and_then(|s| s.plan.as_ref())
                    .ok_or_else(no_plan)?;
                return Ok(plan.render());
            }
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "unknown action {other:?}; use create, done, fail, replan or show"
                )))
            }
        };
        let Some(state) = state else {
            return Err(no_plan());
        };
        self.save(&session, &state).await?;
        let rendered = state.plan.as_ref().map(Plan::render).unwrap_or_default();
        let complete = state.plan.as_ref().is_some_and(Plan::is_complete);
        Ok(format!(
            "{done}{}\n{rendered}",
            if complete { " Every step is done." } else { "" }
        ))
    }
}
