//! `/plan`: the plan the agent keeps for this conversation — its steps with
//! their states and observations, the phase, and what it waits on.

use crate::domain::plan::Phase;
use crate::gateway::Inner;
use crate::store::{SessionId, StoreError};

/// Runs `/plan` for a session.
pub(crate) async fn run(inner: &Inner, session: &SessionId) -> Result<String, StoreError> {
    Ok(match inner.store.plans().of_session(session).await? {
        Some(plan) => {
            let status = match plan.phase {
                Phase::FinalAnswer => "closed with its final answer",
                Phase::WaitingUser => {
                    "waiting on your answer: reply and I go on from its current step"
                }
                _ if plan.is_complete() => "every step is finished",
                _ => "in progress",
            };
            format!("**Plan**\n{}\n\n_{status}_", plan.render())
        }
        None => {
            "There is no plan in this conversation. I make one for work that takes several steps."
                .to_owned()
        }
    })
}
