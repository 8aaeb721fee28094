//! The gateway's side of a turn: approvals through the chat (the turn pauses
//! as a row), background tasks, the memory flush before compaction.

use crate::agent::{Asked, TurnCheckpoint, TurnHost};
use crate::domain::{ApprovalId, SessionId};
use crate::gateway::delivery::origin::Origin;
use crate::gateway::turn::ask::{record, Recorded};
use crate::gateway::turn::sub_host::{NestedSlot, SubAgentHost};
use crate::gateway::Inner;
use crate::llm::{Message, ToolCall};
use crate::store::{
    ApprovalRecord, ApprovalStatus, Conversation, NestedTurn, StoreError, TurnContext, TurnState,
};
use crate::tasks::{StartError, TaskOrigin};
use crate::tools::{Tool, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use switchboard_platform::PlatformAdapter;

pub(crate) struct GatewayHost {
    pub inner: Arc<Inner>,
    pub session_id: SessionId,
    /// Who the turn answers, where, and the message it answers.
    pub conversation: Conversation,
    pub adapter: Arc<dyn PlatformAdapter>,
    /// The gateway's part of a checkpoint (plain input, history row ids, edits).
    pub context: TurnContext,
    /// The approval the turn paused on, recorded but not yet shown: its card
    /// goes out once the turn's text so far is settled in the chat.
    pub paused: Mutex<Option<ApprovalRecord>>,
    /// A sub-agent's approval and checkpoint, until the delegating round
    /// pauses around them ([`TurnHost::pause_nested`]).
    pub nested: NestedSlot,
}

impl GatewayHost {
    /// The host of a turn answering `o`, with the gateway's part of its
    /// checkpoint so far.
    pub(in crate::gateway) fn new(
        inner: &Arc<Inner>,
        o: &Origin,
        context: TurnContext,
    ) -> Arc<GatewayHost> {
        Arc::new(GatewayHost {
            inner: Arc::clone(inner),
            session_id: o.session.clone(),
            conversation: o.conversation.clone(),
            adapter: Arc::clone(&o.adapter),
            context,
            paused: Mutex::new(None),
            nested: NestedSlot::default(),
        })
    }
}

#[async_trait]
impl TurnHost for GatewayHost {
    async fn before_run(&self, tool: &str) {
        self.inner.tool_started(&self.conversation.key, tool).await;
        crate::gateway::turn::planner::step_started(&self.inner, &self.session_id, tool).await;
    }

    async fn request_approval(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        arguments: &Value,
        summary: String,
        checkpoint: TurnCheckpoint,
    ) -> Asked {
        let summary =
            crate::gateway::turn::consent::on_card(summary, self.context.consent.as_deref());
        let record = match record(
            &self.inner,
            &self.session_id,
            &self.conversation,
            &spec.display_name,
            call,
            arguments,
            summary,
        )
        .await
        {
            Recorded::Allowed => return Asked::Allowed,
            Recorded::Unavailable => return Asked::Unavailable,
            Recorded::Asking(record) => *record,
        };
        let id = record.id.clone();
        if self.keep(record, checkpoint).await {
            Asked::Paused(id)
        } else {
            Asked::Unavailable
        }
    }

    async fn pause_nested(&self, approval: &ApprovalId, mut checkpoint: TurnCheckpoint) -> bool {
        let Some((record, nested)) = self.nested.take(approval) else {
            tracing::warn!(
                %approval,
                "a sub-agent paused on an approval this turn did not record"
            );
            return false;
        };
        checkpoint.nested = Some(Box::new(nested));
        self.keep(record, checkpoint).await
    }

    fn for_subagent(&self) -> Option<Arc<dyn TurnHost>> {
        Some(Arc::new(SubAgentHost {
            inner: Arc::clone(&self.inner),
            session_id: self.session_id.clone(),
            conversation: self.conversation.clone(),
            consent: self.context.consent.clone(),
            nested: self.nested.clone(),
        }))
    }

    async fn start_background(
        &self,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        arguments: Value,
    ) -> Result<crate::domain::TaskId, String> {
        let origin = TaskOrigin {
            session_id: self.session_id.clone(),
            conversation: Conversation {
                reply_to: None,
                ..self.conversation.clone()
            },
            adapter: Arc::clone(&self.adapter),
        };
        self.inner
            .tasks
            .start(tool, call, arguments, origin)
            .await
            .map_err(|e| match e {
                StartError::UserCap { .. } => e.to_string(),
                StartError::Store(e) => {
                    tracing::error!(error = %e, "could not start a background task");
                    "the task store is unavailable".to_owned()
                }
            })
    }

    async fn round_context(&self) -> Option<String> {
        crate::gateway::turn::planner::round_context(&self.inner, &self.session_id).await
    }

    async fn after_tools(&self, calls: &[ToolCall], results: &[Message]) -> Vec<Value> {
        crate::gateway::turn::planner::record_results(&self.inner, &self.session_id, calls, results)
            .await
    }

    async fn before_compaction(&self, head: &[Message]) {
        crate::gateway::turn::memory::flush(
            &self.inner,
            &self.conversation.key,
            &self.session_id,
            head,
        )
        .await;
    }
}

impl GatewayHost {
    /// The approval the turn paused on, to show once its text is settled.
    pub(crate) fn take_paused(&self) -> Option<ApprovalRecord> {
        self.paused.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Stores the turn paused on `record` (its card is shown when the turn
    /// ends). The paused turn is a row, stored before its card is shown: a
    /// press handled by any process must find it. `false` when it could not
    /// be stored: the approval is withdrawn.
    async fn keep(&self, record: ApprovalRecord, checkpoint: TurnCheckpoint) -> bool {
        if let Err(e) = self.save_checkpoint(&record.id, checkpoint).await {
            tracing::warn!(error = %e, "could not store the paused turn; the approval is withdrawn");
            let withdrawn = self
                .inner
                .store
                .approvals()
                .decide(
                    &record.id,
                    ApprovalStatus::Denied,
                    None,
                    Some("the paused turn could not be stored"),
                    self.inner.approvals.now(),
                )
                .await;
            if let Err(e) = withdrawn {
                tracing::warn!(error = %e, "could not withdraw an approval");
            }
            return false;
        }
        *self.paused.lock().unwrap_or_else(|p| p.into_inner()) = Some(record);
        true
    }

    /// Stores the paused turn so any process can resume it.
    async fn save_checkpoint(
        &self,
        approval_id: &ApprovalId,
        checkpoint: TurnCheckpoint,
    ) -> Result<(), StoreError> {
        let nested = checkpoint.nested.map(|n| NestedTurn {
            messages: n.messages,
            new_from: n.new_from,
            remaining: n.remaining,
            round: n.round,
            system_context: n.system_context,
        });
        let state = TurnState {
            id: crate::domain::TurnId::new(),
            session_id: self.session_id.clone(),
            approval_id: approval_id.to_owned(),
            origin: self.conversation.clone(),
            messages: checkpoint.messages,
            new_from: checkpoint.new_from,
            remaining: checkpoint.remaining,
            context: TurnContext {
                round: checkpoint.round,
                system_context: checkpoint.system_context,
                nested,
                ..self.context.clone()
            },
        };
        self.inner.store.turns().save(&state).await
    }
}
