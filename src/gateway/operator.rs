//! What the operator's web console may do to the running gateway: decide an
//! approval (the buttons' and `/approve`'s single-winner path: the card is
//! edited to its final state and the paused turn resumes) and cancel a task.

use crate::gateway::commands::approve as approve_cmd;

use crate::approvals::Choice;
use crate::domain::{ApprovalId, TaskId};
use crate::gateway::Inner;
use crate::store::{Store, StoreError};
use std::sync::Arc;
use switchboard_platform::{LinkStatus, Platform, User, UserId};

/// The name decisions taken in the web console are recorded under.
pub const WEB_OPERATOR: &str = "web operator";

/// A handle on a running gateway for the web console. Cheap to clone.
#[derive(Clone)]
pub struct Operator {
    inner: Arc<Inner>,
}

/// The outcome of a decision taken in the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebDecision {
    /// Recorded; the text says what.
    Decided(String),
    /// Refused (already decided, expired, unknown); the text says why.
    Refused(String),
}

impl Operator {
    pub(super) fn new(inner: Arc<Inner>) -> Operator {
        Operator { inner }
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Each adapter's platform and connection.
    pub fn links(&self) -> Vec<(Platform, LinkStatus)> {
        let mut links: Vec<(Platform, LinkStatus)> = self
            .inner
            .platforms
            .adapters
            .iter()
            .map(|(p, a)| (*p, a.link()))
            .collect();
        links.sort_by_key(|(p, _)| p.as_str());
        links
    }

    /// Decides approval `id` as the operator (an approver on every
    /// platform): the first decision wins, whoever takes it.
    pub async fn decide(
        &self,
        id: &ApprovalId,
        choice: Choice,
        reason: Option<String>,
    ) -> WebDecision {
        let platform = match self.inner.store.approvals().get(id).await {
            Ok(Some(record)) => record.chat.platform,
            Ok(None) => return WebDecision::Refused("This approval is unknown.".into()),
            Err(e) => {
                tracing::error!(error = %e, "approval lookup failed");
                return WebDecision::Refused("Could not look up that approval.".into());
            }
        };
        let operator = User {
            id: UserId(0),
            display_name: WEB_OPERATOR.into(),
            is_bot: false,
            is_approver: true,
        };
        let decided = self
            .inner
            .approvals
            .handle_text(platform, &operator, id.as_str(), choice, reason)
            .await;
        let recorded = decided.resume.is_some() || decided.card.is_some();
        let reply = approve_cmd::apply(&self.inner, decided);
        if recorded || reply.starts_with("Recorded") {
            WebDecision::Decided(reply.replace('`', ""))
        } else {
            WebDecision::Refused(reply)
        }
    }

    /// Cancels a task: at once when this process runs it, else by a request
    /// its process picks up. False when it is not running.
    pub async fn cancel_task(&self, id: &TaskId) -> Result<bool, StoreError> {
        if self.inner.tasks.cancel(id) {
            return Ok(true);
        }
        match self.inner.store.tasks().get(id).await? {
            Some(t) if !t.status.is_finished() => self.inner.store.tasks().request_cancel(id).await,
            _ => Ok(false),
        }
    }
}
