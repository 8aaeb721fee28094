//! The planner's part of a turn, around the plan kept in `store.plans()`:
//! the check before planning (a plan waiting on the user takes the reply;
//! the live state of what the open plan's steps and — by the model's
//! explicit check — the request touch is read now, and such a request does
//! not see the stale task summary), the
//! plan with its latest outcome and next action before every model call,
//! each tool result recorded on the current step, and where the plan stands
//! when the turn ends (waiting on the user, or its final answer).

use crate::agent::{StopReason, TurnOutcome};
use crate::domain::plan::Plan;
use crate::domain::SessionKey;
use crate::gateway::turn::live_check::{self, Checked};
use crate::gateway::turn::live_state::{Snapshot, Touches};
use crate::gateway::Inner;
use crate::llm::{Message, ToolCall};
use crate::store::SessionId;
use serde_json::{json, Value};

/// What the check before a turn found.
#[derive(Debug, Default)]
pub(in crate::gateway) struct PlanCheck {
    /// The live state section, read now.
    pub live: Option<String>,
    /// The turn changes configuration-like state: the persisted task summary
    /// may be stale about it and is not shown.
    pub config_request: bool,
}

async fn load(inner: &Inner, session: &SessionId) -> Option<Plan> {
    match inner.store.plans().of_session(session).await {
        Ok(plan) => plan,
        Err(e) => {
            tracing::warn!(error = %e, "plan unavailable");
            None
        }
    }
}

async fn save(inner: &Inner, session: &SessionId, plan: &Plan) {
    if let Err(e) = inner.store.plans().save(session, plan).await {
        tracing::warn!(error = %e, "could not save the plan");
    }
}

/// What the open plan's steps touch (its unfinished steps' tools).
fn plan_touches(plan: &Plan) -> Touches {
    plan.steps
        .iter()
        .filter_map(|s| s.tool.as_deref())
        .map(Touches::of_tool)
        .fold(Touches::default(), Touches::or)
}

/// The check before planning, for a turn on the user's `message` (`None`
/// for other inputs; `has_summary`: the session keeps a task summary): a
/// plan waiting on the user takes the message as the reply; the kinds of
/// live state the open plan's steps touch, and those the model's check
/// (`live_check`) names for a request that is not plain chat, are read now.
/// The check is made only when something could be stale: a summary, an
/// open plan, or any live state at all.
pub(in crate::gateway) async fn before_turn(
    inner: &Inner,
    key: &SessionKey,
    session: &SessionId,
    message: Option<&str>,
    has_summary: bool,
) -> PlanCheck {
    let mut planned = Touches::default();
    let mut open = false;
    if let Some(mut plan) = load(inner, session).await.filter(Plan::is_open) {
        open = true;
        planned = plan_touches(&plan);
        if let Some(reply) =
            message.filter(|_| plan.phase == crate::domain::plan::Phase::WaitingUser)
        {
            plan.user_replied(reply);
            save(inner, session, &plan).await;
        }
    }
    let request = message.filter(|m| {
        inner.features.extractor.book().config().live_check && !live_check::is_plain_chat(m)
    });
    if request.is_none() && !planned.any() {
        return PlanCheck::default();
    }
    let snapshot = Snapshot::read(inner, key, session).await;
    let checked = match request {
        Some(text) if has_summary || open || snapshot.has_any() => {
            Some(live_check::classify(inner, key, text).await)
        }
        _ => None,
    };
    let asked = checked.map(Checked::touches).unwrap_or_default();
    let touches = planned.or(asked);
    PlanCheck {
        live: snapshot.section(touches),
        // A fallback reads every kind but does not know the request changes
        // any: the summary stays (the live state says it wins).
        config_request: planned.any() || matches!(checked, Some(Checked::Classified(t)) if t.any()),
    }
}

/// The plan's part of a model call: read anew, so each call sees the
/// latest step outcome and the next action.
pub(crate) async fn round_context(inner: &Inner, session: &SessionId) -> Option<String> {
    load(inner, session).await.and_then(|p| p.context())
}

/// A tool is about to run: the plan's current step, when it is the
/// step's tool, is running (so the console shows it while it runs).
pub(crate) async fn step_started(inner: &Inner, session: &SessionId, tool: &str) {
    if let Some(mut plan) = load(inner, session).await.filter(Plan::is_open) {
        if plan.start(tool) {
            save(inner, session, &plan).await;
        }
    }
}

/// Records a round's tool results on the plan's current step; returns a
/// `plan_outcome` trace record per result recorded.
pub(crate) async fn record_results(
    inner: &Inner,
    session: &SessionId,
    calls: &[ToolCall],
    results: &[Message],
) -> Vec<Value> {
    let Some(mut plan) = load(inner, session).await.filter(Plan::is_open) else {
        return Vec::new();
    };
    let mut records = Vec::new();
    for result in results {
        let Some(call) = calls
            .iter()
            .find(|c| Some(c.id.as_str()) == result.tool_call_id.as_deref())
        else {
            continue;
        };
        if let Some(o) = plan.record(&call.name, &result.content) {
            records.push(json!({
                "step": o.step + 1, "tool": o.tool, "ok": o.ok,
                "observation": o.observation, "phase": plan.phase.as_str(),
                "revision": plan.revision,
            }));
        }
    }
    if !records.is_empty() {
        save(inner, session, &plan).await;
    }
    records
}

/// Where the plan stands once the turn ended: waiting on the user when the
/// turn asked a question — or answered while a step failed (it asked
/// whether to retry, continue or skip) — and closed with the final answer
/// when every step is finished.
pub(in crate::gateway) async fn after_turn(
    inner: &Inner,
    session: &SessionId,
    outcome: &TurnOutcome,
) {
    let Some(mut plan) = load(inner, session).await.filter(Plan::is_open) else {
        return;
    };
    let failed = plan
        .current()
        .is_some_and(|i| plan.steps[i].state == crate::domain::plan::StepState::Failed);
    match outcome.stop {
        StopReason::WaitingForUser => plan.wait_for_user(&outcome.text),
        StopReason::Answered if failed => plan.wait_for_user(&outcome.text),
        StopReason::Answered if plan.is_complete() => plan.close(Some(&outcome.text)),
        _ => return,
    }
    save(inner, session, &plan).await;
}
