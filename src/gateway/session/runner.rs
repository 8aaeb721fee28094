//! What the session workers run their work with: the turn stage, given to
//! the sessions when the gateway is built, so a worker orders the work of
//! its session without knowing how a turn runs.

use crate::approvals::Decision;
use crate::domain::{ApprovalId, SessionId, SessionKey};
use crate::gateway::session::input::SessionInput;
use crate::gateway::Inner;
use async_trait::async_trait;
use std::sync::Arc;
use switchboard_platform::InboundMessage;
use tokio_util::sync::CancellationToken;

/// Runs a session's turns, one at a time as its worker hands them over.
#[async_trait]
pub(crate) trait Runner: Send + Sync {
    /// Runs `input` in `session` (the session of `key`), answering the
    /// messages of inbox `rows`; `cancel` stops it (`/stop`, shutdown).
    async fn run(
        &self,
        inner: &Arc<Inner>,
        key: SessionKey,
        session: SessionId,
        input: SessionInput,
        rows: Vec<i64>,
        cancel: CancellationToken,
    );

    /// Resumes the turn paused on `approval_id`, with the decision when its
    /// decider passed it along.
    async fn resume(
        &self,
        inner: &Arc<Inner>,
        approval_id: ApprovalId,
        decided: Option<Decision>,
        cancel: CancellationToken,
    );

    /// Whether `message` is answered on its own (a command) rather than
    /// collected into one turn with the messages around it.
    fn alone(&self, message: &InboundMessage) -> bool;
}
