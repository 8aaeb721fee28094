//! The gateway's side of a turn: approvals through the chat (the turn pauses
//! as a row), background tasks, the memory flush before compaction.

use super::Inner;
use crate::agent::{Asked, TurnCheckpoint, TurnHost};
use crate::approvals::ApprovalRequest;
use crate::llm::{Message, ToolCall};
use crate::store::{
    ApprovalRecord, ApprovalStatus, Conversation, StoreError, TurnContext, TurnState,
};
use crate::tasks::{StartError, TaskOrigin};
use crate::tools::{Tool, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use switchboard_platform::PlatformAdapter;

pub(crate) struct GatewayHost {
    pub inner: Arc<Inner>,
    pub session_id: String,
    /// Who the turn answers, where, and the message it answers.
    pub conversation: Conversation,
    pub adapter: Arc<dyn PlatformAdapter>,
    /// The gateway's part of a checkpoint (plain input, history row ids, edits).
    pub context: TurnContext,
    /// The approval the turn paused on, recorded but not yet shown: its card
    /// goes out once the turn's text so far is settled in the chat.
    pub paused: Mutex<Option<ApprovalRecord>>,
}

#[async_trait]
impl TurnHost for GatewayHost {
    async fn request_approval(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        arguments: &Value,
        summary: String,
        checkpoint: TurnCheckpoint,
    ) -> Asked {
        let approvals = &self.inner.approvals;
        match approvals
            .ruled(
                self.conversation.chat.platform,
                &self.conversation.user,
                &call.name,
                arguments,
            )
            .await
        {
            Ok(true) => return Asked::Allowed,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "approval could not be requested");
                return Asked::Unavailable;
            }
        }
        let request = ApprovalRequest {
            id: crate::domain::ApprovalId::new().0,
            session_id: &self.session_id,
            requester: &self.conversation.user,
            chat: self.conversation.chat,
            tool_name: &call.name,
            tool_display: &spec.display_name,
            arguments,
            summary,
        };
        let record = match approvals.record(request).await {
            Ok(record) => record,
            Err(e) => {
                tracing::warn!(error = %e, "approval could not be requested");
                return Asked::Unavailable;
            }
        };
        // The paused turn is a row, stored before its card is shown: a press
        // handled by any process must find it.
        if let Err(e) = self.save_checkpoint(&record.id, checkpoint).await {
            tracing::warn!(error = %e, "could not store the paused turn; the approval is withdrawn");
            let withdrawn = self
                .inner
                .store
                .decide_approval(
                    &record.id,
                    ApprovalStatus::Denied,
                    None,
                    Some("the paused turn could not be stored"),
                    approvals.now(),
                )
                .await;
            if let Err(e) = withdrawn {
                tracing::warn!(error = %e, "could not withdraw an approval");
            }
            return Asked::Unavailable;
        }
        let id = record.id.clone();
        *self.paused.lock().unwrap_or_else(|p| p.into_inner()) = Some(record);
        Asked::Paused(id)
    }

    async fn start_background(
        &self,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        arguments: Value,
    ) -> Result<String, String> {
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

    async fn before_compaction(&self, head: &[Message]) {
        super::memory::flush(&self.inner, &self.conversation.key, &self.session_id, head).await;
    }
}

impl GatewayHost {
    /// The approval the turn paused on, to show once its text is settled.
    pub(crate) fn take_paused(&self) -> Option<ApprovalRecord> {
        self.paused.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Stores the paused turn so any process can resume it.
    async fn save_checkpoint(
        &self,
        approval_id: &str,
        checkpoint: TurnCheckpoint,
    ) -> Result<(), StoreError> {
        let state = TurnState {
            id: crate::domain::TurnId::new().0,
            session_id: self.session_id.clone(),
            approval_id: approval_id.to_owned(),
            origin: self.conversation.clone(),
            messages: checkpoint.messages,
            new_from: checkpoint.new_from,
            remaining: checkpoint.remaining,
            context: TurnContext {
                round: checkpoint.round,
                system_context: checkpoint.system_context,
                ..self.context.clone()
            },
        };
        self.inner.store.save_turn_state(&state).await
    }
}
