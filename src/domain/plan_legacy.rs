//! A plan as it was kept before plans had a table of their own: inside the
//! session's execution state, steps as sentences with pending/done/failed
//! and a note. Read once and moved to the plans table.

use super::plan::{clean, Phase, Plan, PlanStep, StepState, OBSERVATION_CHARS, PLAN_TEXT_CHARS};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct OldStep {
    text: String,
    status: String,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Deserialize)]
struct OldPlan {
    goal: String,
    steps: Vec<OldStep>,
    #[serde(default)]
    revision: u32,
    #[serde(default)]
    reasons: Vec<String>,
}

impl Plan {
    /// The plan inside a legacy execution-state document, if it holds one.
    pub fn from_legacy(execution_state: &Value) -> Option<Plan> {
        let old: OldPlan = serde_json::from_value(execution_state.get("plan")?.clone()).ok()?;
        let steps: Vec<PlanStep> = old
            .steps
            .iter()
            .map(|s| PlanStep {
                text: clean(&s.text, PLAN_TEXT_CHARS),
                tool: None,
                inputs: None,
                expected: None,
                state: match s.status.as_str() {
                    "done" => StepState::Done,
                    "failed" => StepState::Failed,
                    _ => StepState::Pending,
                },
                observation: s.note.as_deref().map(|n| clean(n, OBSERVATION_CHARS)),
                retries: 0,
                passed: false,
            })
            .collect();
        let started = steps.iter().any(|s| s.state != StepState::Pending);
        let mut plan = Plan {
            goal: clean(&old.goal, PLAN_TEXT_CHARS),
            steps,
            revision: old.revision.max(1),
            reasons: old.reasons,
            phase: if started {
                Phase::Executing
            } else {
                Phase::Planning
            },
            question: None,
            reply: None,
            last_outcome: None,
            answer: None,
        };
        if plan.is_complete() {
            plan.close(None);
        }
        Some(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_plan_becomes_a_typed_one() {
        let doc = serde_json::json!({"goal": "x", "status": "completed", "plan": {
            "goal": "Quarterly report", "revision": 2, "reasons": ["no template"],
            "steps": [{"text": "gather", "status": "done", "note": "12 rows"},
                      {"text": "draft", "status": "failed", "note": "missing"},
                      {"text": "send", "status": "pending"}]}});
        let p = Plan::from_legacy(&doc).unwrap();
        assert_eq!(
            (p.revision, p.phase, p.current()),
            (2, Phase::Executing, Some(1))
        );
        assert_eq!(p.steps[0].observation.as_deref(), Some("12 rows"));
        assert_eq!(p.steps[1].state, StepState::Failed);
        assert!(Plan::from_legacy(&serde_json::json!({"goal": "x"})).is_none());
    }
}
