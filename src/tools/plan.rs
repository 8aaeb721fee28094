//! `plan`: the agent's plan for the calling session, kept in the plans table
//! (`store.plans()`) — create it with typed steps, update the steps left
//! with a reason, retry / continue past / skip a failed step, mark a step
//! without a tool done, close it with the final answer, show it. Tool
//! results are recorded on the current step by the runtime, not here.

use super::args::parse_args;
use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::domain::plan::{Plan, PlanError, StepDraft, MAX_PLAN_STEPS, MAX_RETRIES};
use crate::store::Store;
use serde::Deserialize;
use serde_json::{json, Value};

pub const NAME: &str = crate::domain::plan::PLAN_TOOL;

/// The `plan` tool over the store.
pub struct PlanTool {
    store: Store,
    spec: ToolSpec,
}

fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["create", "update", "done", "retry", "continue", "skip", "close", "show"]},
            "goal": {"type": "string", "description": "create: what the plan achieves"},
            "steps": {
                "type": "array",
                "description": "create/update: the steps in order",
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "what the step does"},
                        "tool": {"type": "string", "description": "the tool it calls, if any"},
                        "inputs": {"type": "object", "description": "the arguments it calls the tool with"},
                        "expected": {"type": "string", "description": "the result it should give"}
                    },
                    "required": ["text"]
                }
            },
            "step": {"type": "integer", "minimum": 1, "description": "done/retry/continue/skip: which step (default: the current one)"},
            "note": {"type": "string", "description": "done: what came of it; close: the final answer's gist"},
            "reason": {"type": "string", "description": "update: why the plan changes"}
        },
        "required": ["action"],
        "additionalProperties": false
    })
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
                     steps (at most {MAX_PLAN_STEPS}; each with text, and the tool it calls, its inputs and the result \
                     expected) before work that takes several tool calls. Each tool result is recorded on the current \
                     step for you; after each result decide whether the rest still fits and, if not, action=update with \
                     a reason and the new remaining steps. When a step failed, ask the user, then action=retry (at most \
                     {MAX_RETRIES} times), continue (go on without it) or skip. action=done marks a step without a tool \
                     done (note: its result); action=close ends the plan with the final answer (note: its gist); \
                     action=show reads it."
                ),
                parameters: parameters(),
                concurrency_safe: false,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
        }
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
    steps: Vec<StepDraft>,
    step: Option<usize>,
    note: Option<String>,
    reason: Option<String>,
}

/// Applies a change to an existing plan; the text says what happened.
fn change(plan: &mut Plan, args: &PlanArgs) -> Result<String, PlanError> {
    let n = |i: usize| i + 1;
    Ok(match args.action.as_str() {
        "update" => {
            plan.update(args.reason.as_deref().unwrap_or_default(), &args.steps)?;
            format!("Plan updated (revision {}).", plan.revision)
        }
        "done" => format!("Step {} done.", n(plan.mark_done(args.step, args.note.as_deref())?)),
        "retry" => format!("Step {} will run again.", n(plan.retry(args.step)?)),
        "continue" => format!(
            "Going on past failed step {}.",
            n(plan.continue_past(args.step)?)
        ),
        "skip" => format!("Step {} skipped.", n(plan.skip(args.step)?)),
        "close" => {
            plan.close(args.note.as_deref());
            "Plan closed: give the final answer now.".to_owned()
        }
        other => {
            return Err(PlanError(format!(
                "unknown action {other:?}; use create, update, done, retry, continue, skip, close or show"
            )))
        }
    })
}

#[async_trait::async_trait]
impl Tool for PlanTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: PlanArgs = parse_args(NAME, args)?;
        let session = &ctx.session_id;
        let plans = self.store.plans();
        let invalid = |e: PlanError| ToolError::InvalidArguments(e.0);
        let current = plans.of_session(session).await.map_err(storage)?;
        let (plan, done) = match (args.action.as_str(), current) {
            ("create", _) => {
                let plan = Plan::create(args.goal.as_deref().unwrap_or_default(), &args.steps)
                    .map_err(invalid)?;
                (plan, "Plan created.".to_owned())
            }
            ("show", Some(plan)) => return Ok(plan.render()),
            (_, Some(mut plan)) if plan.is_open() => {
                let done = change(&mut plan, &args).map_err(invalid)?;
                (plan, done)
            }
            _ => {
                return Err(ToolError::InvalidArguments(
                    "there is no open plan: create one first".into(),
                ))
            }
        };
        plans.save(session, &plan).await.map_err(storage)?;
        let complete = plan.is_open() && plan.is_complete();
        Ok(format!(
            "{done}{}\n{}",
            if complete {
                " Every step is finished: close the plan."
            } else {
                ""
            },
            plan.render()
        ))
    }
}
