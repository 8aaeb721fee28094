//! The gateway's side of a turn: approvals through the chat, background tasks.

use super::hold;
use super::session::{Awaiting, EditWaiter};
use super::Inner;
use crate::agent::{ApprovalOutcome, TurnCheckpoint, TurnHost};
use crate::approvals::{edited_arguments, ApprovalRequest, Decision, Opened};
use crate::llm::{Message, ToolCall};
use crate::store::{SessionKey, TurnContext, TurnOrigin, TurnState};
use crate::tasks::{StartError, TaskOrigin};
use crate::tools::{Tool, ToolSpec};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;
use std::sync::Mutex;
use switchboard_platform::{
    ChatAddress, ChatKind, MessageId, OutgoingMessage, PlatformAdapter, User,
};
use tokio::sync::oneshot;

pub(crate) struct GatewayHost {
    pub inner: Arc<Inner>,
    pub key: SessionKey,
    pub session_id: String,
    pub chat: ChatAddress,
    pub kind: ChatKind,
    pub user: User,
    pub adapter: Arc<dyn PlatformAdapter>,
    pub awaiting: Awaiting,
    pub reply_to: Option<MessageId>,
    /// For a resumed turn: the decision already taken for this call id.
    pub predecided: Mutex<Option<(String, Predecided)>>,
    /// The gateway's part of a checkpoint (plain input, history row ids).
    pub context: TurnContext,
}

const MAX_EDITS: usize = 3;

/// What a resumed turn brings for the call it paused on.
pub(crate) enum Predecided {
    /// Decided: apply it.
    Outcome(ApprovalOutcome),
    /// Sent back for editing: the requester's next message is the new
    /// arguments (the paused turn's row stays until it arrives). `text`
    /// receives it when the wait was armed before the turn resumed.
    Edit {
        approval_id: String,
        text: Option<oneshot::Receiver<String>>,
    },
}

#[async_trait]
impl TurnHost for GatewayHost {
    async fn approve(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        arguments: &Value,
        summary: String,
        checkpoint: TurnCheckpoint,
    ) -> ApprovalOutcome {
        let mut args = arguments.clone();
        let mut summary = summary;
        match self.take_predecided(&call.id) {
            Some(Predecided::Outcome(outcome)) => return outcome,
            Some(Predecided::Edit { approval_id, text }) => {
                let edit = text.unwrap_or_else(|| self.expect_edit(&approval_id));
                match self.take_edit(call, &args, edit, &approval_id, true).await {
                    Ok((new_args, new_summary)) => (args, summary) = (new_args, new_summary),
                    Err(outcome) => return outcome,
                }
            }
            None => {}
        }
        for _ in 0..=MAX_EDITS {
            let approval_id = uuid::Uuid::new_v4().simple().to_string();
            // Armed before the card is shown: the new arguments may be sent right
            // after an "edit" press, before this task wakes up to wait for them.
            let edit = self.expect_edit(&approval_id);
            let request = ApprovalRequest {
                id: approval_id.clone(),
                session_id: &self.session_id,
                requester: &self.user,
                chat: self.chat,
                tool_name: &call.name,
                tool_display: &spec.display_name,
                arguments: &args,
                summary: summary.clone(),
            };
            // The paused turn lives in the database (this task is only a cache of
            // it), saved before the card is shown: a press handled by another
            // process must find it.
            let saved = self.save_checkpoint(&approval_id, &checkpoint, &args).await;
            let pending = match self
                .inner
                .approvals
                .open(self.adapter.as_ref(), request)
                .await
            {
                Ok(Opened::Pending(p)) => p,
                Ok(Opened::Ruled) => {
                    self.stop_expecting_edit();
                    self.drop_checkpoint(saved, &approval_id).await;
                    return ApprovalOutcome::Allowed { arguments: args };
                }
                Err(e) => {
                    self.stop_expecting_edit();
                    self.drop_checkpoint(saved, &approval_id).await;
                    tracing::warn!(error = %e, "approval could not be requested");
                    return ApprovalOutcome::Unavailable;
                }
            };
            let waited = tokio::select! {
                w = self.inner.approvals.wait(self.adapter.as_ref(), pending) => w,
                // Shutting down: leave the stored turn for the next process.
                () = self.inner.shutdown.cancelled(), if saved => return ApprovalOutcome::Abandoned,
            };
            let decision = match waited {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(error = %e, "approval wait failed");
                    Decision::Expired
                }
            };
            if decision != Decision::Edit {
                self.stop_expecting_edit();
            }
            // Whoever takes the stored turn resumes it; if another process (or the
            // expiry sweeper) took it first, this copy steps aside. An edit keeps
            // the row until the new arguments arrive, so a restart while waiting
            // for them resumes the wait.
            if saved && decision != Decision::Edit && !self.claim(&approval_id).await {
                self.stop_expecting_edit();
                return ApprovalOutcome::Abandoned;
            }
            match decision {
                Decision::Allow | Decision::Always => {
                    return ApprovalOutcome::Allowed { arguments: args }
                }
                Decision::Deny(reason) => return ApprovalOutcome::Denied { reason },
                Decision::Expired => return ApprovalOutcome::Expired,
                Decision::Edit => {
                    match self.take_edit(call, &args, edit, &approval_id, saved).await {
                        Ok((new_args, new_summary)) => (args, summary) = (new_args, new_summary),
                        Err(outcome) => return outcome,
                    }
                }
            }
        }
        ApprovalOutcome::Denied {
            reason: Some("too many edits".into()),
        }
    }

    async fn start_background(
        &self,
        tool: Arc<dyn Tool>,
        call: &ToolCall,
        arguments: Value,
    ) -> Result<String, String> {
        let origin = TaskOrigin {
            session_id: self.session_id.clone(),
            key: self.key,
            chat: self.chat,
            kind: self.kind,
            user: self.user.clone(),
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
        super::memory::flush(&self.inner, &self.key, &self.session_id, head).await;
    }
}

impl GatewayHost {
    /// Waits for the requester's next message after an edit press on
    /// `approval_id` and turns it into new arguments and a new card summary
    /// (`Err`: the outcome to report instead).
    /// When the paused turn is `stored`, it is claimed once the text arrives
    /// (or the wait times out); if someone else claimed it, this copy steps aside.
    async fn take_edit(
        &self,
        call: &ToolCall,
        args: &Value,
        edit: oneshot::Receiver<String>,
        approval_id: &str,
        stored: bool,
    ) -> Result<(Value, String), ApprovalOutcome> {
        let text = tokio::select! {
            text = self.edit_text(edit) => text,
            // Shutting down: the row stays, the next process waits for the edit.
            () = self.inner.shutdown.cancelled(), if stored => {
                return Err(ApprovalOutcome::Abandoned)
            }
        };
        if stored && !self.claim(approval_id).await {
            return Err(ApprovalOutcome::Abandoned);
        }
        let Some(text) = text else {
            return Err(ApprovalOutcome::Expired);
        };
        let Some(tool) = self.inner.agent.tools().get(&call.name) else {
            return Err(ApprovalOutcome::Unavailable);
        };
        let Some(new_args) = edited_arguments(args, &text) else {
            // The card opens again as it was: another edit, or a decision.
            self.say(&format!(
                "I couldn't use that as new arguments; {}. The card is open again.",
                crate::approvals::edit_prompt(&args.to_string())
            ))
            .await;
            return Ok((args.clone(), tool.approval_summary(args).await));
        };
        let summary = tool.approval_summary(&new_args).await;
        Ok((new_args, summary))
    }

    fn take_predecided(&self, call_id: &str) -> Option<Predecided> {
        let mut slot = self.predecided.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some((id, _)) if id == call_id => slot.take().map(|(_, outcome)| outcome),
            _ => None,
        }
    }

    /// Removes a checkpoint that no card came to need.
    async fn drop_checkpoint(&self, saved: bool, approval_id: &str) {
        if saved {
            if let Err(e) = self.inner.store.claim_turn_state(approval_id).await {
                tracing::warn!(error = %e, "could not remove an unneeded paused-turn row");
            }
        }
    }

    /// Stores the paused turn so any process can resume it. Returns whether it was saved.
    async fn save_checkpoint(
        &self,
        approval_id: &str,
        checkpoint: &TurnCheckpoint,
        args: &Value,
    ) -> bool {
        let mut remaining = checkpoint.remaining.clone();
        // Bind the stored call to the exact arguments on the card (after edits).
        if let Some(first) = remaining.first_mut() {
            first.arguments = args.to_string();
        }
        let state = TurnState {
            id: uuid::Uuid::new_v4().simple().to_string(),
            session_id: self.session_id.clone(),
            approval_id: approval_id.to_owned(),
            origin: TurnOrigin {
                key: self.key,
                chat: self.chat,
                kind: self.kind,
                user: self.user.clone(),
                reply_to: self.reply_to,
            },
            messages: checkpoint.messages.clone(),
            new_from: checkpoint.new_from,
            remaining,
            context: TurnContext {
                round: checkpoint.round,
                system_context: checkpoint.system_context.clone(),
                ..self.context.clone()
            },
        };
        match self.inner.store.save_turn_state(&state).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "could not persist the paused turn; it will not survive a restart");
                false
            }
        }
    }

    /// Lets the gateway hand this turn the requester's next message once
    /// `approval_id` is sent back for editing.
    fn expect_edit(&self, approval_id: &str) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        *self.awaiting.lock().unwrap_or_else(|p| p.into_inner()) = Some(EditWaiter {
            approval_id: approval_id.to_owned(),
            tx,
        });
        rx
    }

    /// Takes the stored paused turn for this process. False when another
    /// process (or the expiry sweeper) took it, or the gateway stops first
    /// (the row then stays for the next process): an approved call never runs
    /// without its claim, so it runs at most once.
    async fn claim(&self, approval_id: &str) -> bool {
        let store = &self.inner.store;
        hold::until_stored(&self.inner, "claiming a paused turn", || {
            store.claim_turn_state(approval_id)
        })
        .await
        .flatten()
        .is_some()
    }

    fn stop_expecting_edit(&self) {
        self.awaiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    /// Waits for the requester's next message: the edited arguments.
    async fn edit_text(&self, rx: oneshot::Receiver<String>) -> Option<String> {
        let text = tokio::time::timeout(self.inner.approval_timeout, rx)
            .await
            .ok()
            .and_then(Result::ok);
        self.stop_expecting_edit();
        text
    }

    async fn say(&self, text: &str) {
        if let Err(e) = self
            .adapter
            .send(&self.chat, OutgoingMessage::text(text))
            .await
        {
            tracing::warn!(error = %e, "could not send a notice");
        }
    }
}
