//! Approvals for a sub-agent that acts: its call shows a card to the person
//! whose turn delegated the work — the same card, rules and single-winner
//! decision as the main agent's, and the same durability. The sub-agent's
//! turn pauses (its checkpoint is kept here), its delegation returns
//! [`crate::tools::ToolError::Paused`], and the delegating round pauses
//! around it: one stored row holds both turns, and the decision — in any
//! process, after a restart too — resumes the main turn, which resumes the
//! sub-agent where it stopped.

use crate::agent::{Asked, TurnCheckpoint, TurnHost};
use crate::domain::{ApprovalId, SessionId};
use crate::gateway::turn::ask::{record, Recorded};
use crate::gateway::Inner;
use crate::llm::ToolCall;
use crate::store::{ApprovalRecord, Conversation};
use crate::tools::{Tool, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// A sub-agent's recorded approval and its paused turn, handed from its host
/// to the delegating turn's.
#[derive(Clone, Default)]
pub(crate) struct NestedSlot(Arc<Mutex<Option<(ApprovalRecord, TurnCheckpoint)>>>);

impl NestedSlot {
    fn put(&self, record: ApprovalRecord, checkpoint: TurnCheckpoint) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((record, checkpoint));
    }

    /// The pause recorded for `approval`, once.
    pub(crate) fn take(&self, approval: &ApprovalId) -> Option<(ApprovalRecord, TurnCheckpoint)> {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_some_and(|(r, _)| r.id == *approval) {
            slot.take()
        } else {
            None
        }
    }
}

pub(crate) struct SubAgentHost {
    pub inner: Arc<Inner>,
    pub session_id: SessionId,
    pub conversation: Conversation,
    /// The delegating turn's consent quote (see `gateway::consent`).
    pub consent: Option<String>,
    pub nested: NestedSlot,
}

#[async_trait]
impl TurnHost for SubAgentHost {
    /// A sub-agent's tool counts as its delegating turn's.
    async fn before_run(&self, tool: &str) {
        self.inner.tool_started(&self.conversation.key, tool).await;
    }

    async fn request_approval(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        arguments: &Value,
        summary: String,
        checkpoint: TurnCheckpoint,
    ) -> Asked {
        let display = format!("{} (for a sub-agent)", spec.display_name);
        let summary = crate::gateway::turn::consent::on_card(summary, self.consent.as_deref());
        let recorded = record(
            &self.inner,
            &self.session_id,
            &self.conversation,
            &display,
            call,
            arguments,
            summary,
        )
        .await;
        match recorded {
            Recorded::Allowed => Asked::Allowed,
            Recorded::Unavailable => Asked::Unavailable,
            Recorded::Asking(record) => {
                let id = record.id.clone();
                self.nested.put(*record, checkpoint);
                Asked::Paused(id)
            }
        }
    }

    async fn start_background(
        &self,
        _tool: Arc<dyn Tool>,
        _call: &ToolCall,
        _arguments: Value,
    ) -> Result<crate::domain::TaskId, String> {
        Err("a sub-agent cannot start background tasks".into())
    }
}
