//! The turn stage as the session workers see it (their
//! [`Runner`]): a session's input starts a turn — or, when the session owes
//! an approval sent back for editing its new arguments, resumes that one —
//! with its inbox rows in flight until it ends; a decided approval resumes
//! its paused turn.

use crate::approvals::Decision;
use crate::domain::{ApprovalId, SessionId, SessionKey};
use crate::gateway::session::input::SessionInput;
use crate::gateway::session::runner::Runner;
use crate::gateway::turn::resume::{self, Next};
use crate::gateway::turn::run;
use crate::gateway::Inner;
use async_trait::async_trait;
use std::sync::Arc;
use switchboard_platform::InboundMessage;
use tokio_util::sync::CancellationToken;

/// The gateway's turns, run for its session workers.
pub(in crate::gateway) struct TurnRunner;

#[async_trait]
impl Runner for TurnRunner {
    async fn run(
        &self,
        inner: &Arc<Inner>,
        key: SessionKey,
        session: SessionId,
        input: SessionInput,
        rows: Vec<i64>,
        cancel: CancellationToken,
    ) {
        inner.turn_started(key, rows);
        // A turn paused on an approval sent back for editing takes the
        // requester's next message in this session as the new arguments.
        let edited = match &input {
            SessionInput::Message(m) => awaited_edit(inner, &session)
                .await
                .map(|id| (id, Next::Edit(m.text.clone()))),
            _ => None,
        };
        match edited {
            Some((approval_id, edit)) => {
                resume::resume_with(inner, &approval_id, edit, cancel).await;
            }
            None => run::process(inner, key, session, input, cancel).await,
        }
        inner.turn_ended(&key).await;
    }

    async fn resume(
        &self,
        inner: &Arc<Inner>,
        approval_id: ApprovalId,
        decided: Option<Decision>,
        cancel: CancellationToken,
    ) {
        resume::resume(inner, &approval_id, decided, cancel).await;
    }

    fn alone(&self, message: &InboundMessage) -> bool {
        crate::gateway::commands::parse(&message.text).is_some()
    }
}

/// The approval whose new arguments this session's next message is, if one
/// was sent back for editing.
async fn awaited_edit(inner: &Inner, session: &SessionId) -> Option<ApprovalId> {
    inner
        .store
        .turns()
        .awaited_edit(session)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "could not look for an awaited edit");
            None
        })
}
