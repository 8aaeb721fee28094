//! `/plan`: the plan the agent keeps for this conversation; and the plan's
//! part of each turn — the current step in every round's system prompt, and
//! the resume instruction when the user says "retry" / "continue" / "继续".

use crate::agent::{is_resume, Plan};
use crate::gateway::Inner;
use crate::memory::ExecutionState;
use crate::store::{SessionId, SessionState, StoreError};

fn plan_of(state: &SessionState) -> Option<Plan> {
    state
        .execution_state
        .as_deref()
        .and_then(|j| serde_json::from_str::<ExecutionState>(j).ok())
        .and_then(|e| e.plan)
}

/// Runs `/plan` for a session.
pub(crate) async fn run(inner: &Inner, session: &SessionId) -> Result<String, StoreError> {
    let state = inner.store.sessions().state(session).await?;
    Ok(match plan_of(&state) {
        Some(plan) => {
            let status = if plan.is_complete() {
                "every step is done"
            } else {
                "say \"continue\" (or \"继续\") to resume it at its current step"
            };
            format!("**Plan**\n{}\n\n_{status}_", plan.render())
        }
        None => {
            "There is no plan in this conversation. I make one for work that takes several steps."
                .to_owned()
        }
    })
}

/// The plan's part of a round's system prompt: read anew, so a step marked
/// done in one round shows in the next.
pub(crate) async fn round_context(inner: &Inner, session_id: &SessionId) -> Option<String> {
    match inner.store.sessions().state(session_id).await {
        Ok(state) => plan_of(&state).and_then(|p| p.context()),
        Err(e) => {
            tracing::debug!(error = %e, "plan unavailable for this round");
            None
        }
    }
}

/// `context` with the resume instruction added when `message` only asks to
/// go on and the session's plan has a step left.
pub(crate) fn with_resume(
    context: Option<String>,
    state: &SessionState,
    message: Option<&str>,
) -> Option<String> {
    let resume = message
        .filter(|m| is_resume(m))
        .and_then(|_| plan_of(state))
        .and_then(|p| p.resume_context());
    match (context, resume) {
        (Some(c), Some(r)) => Some(format!("{c}\n\n{r}")),
        (c, r) => c.or(r),
    }
}
