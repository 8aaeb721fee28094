//! What a turn is started or resumed with: the requests the gateway (and a
//! sub-agent's delegate tool) hands the agent, the model a turn runs on, and
//! the state the agent's loop works on.

use crate::domain::{Conversation, SessionId};
use crate::llm::{Message, ToolCall};
use crate::tools::{Resolution, TurnCheckpoint, TurnHost};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A paused turn to resume (see [`crate::agent::TurnCheckpoint`]).
pub struct ResumeRequest {
    pub session_id: SessionId,
    pub origin: Option<Conversation>,
    pub messages: Vec<Message>,
    pub new_from: usize,
    pub remaining: Vec<ToolCall>,
    /// The round the turn paused in; the round limit counts on from it.
    pub round: usize,
    pub system_context: Option<String>,
    /// The decision for the call the turn paused on: the first of
    /// `remaining`, or — when `nested` — the sub-agent's.
    pub resolution: Resolution,
    /// The first of `remaining` is a delegation whose sub-agent paused: its
    /// checkpoint, continued with `resolution`.
    pub nested: Option<Box<TurnCheckpoint>>,
    pub host: Arc<dyn TurnHost>,
    pub cancel: CancellationToken,
    /// The model the turn continues on; `None`: the agent's.
    pub model: Option<TurnModel>,
}

/// What [`super::Agent`]'s loop works on.
pub(super) struct Drive {
    /// The session the tools act for (memory, stored results, schedules).
    pub(super) session_id: SessionId,
    /// What the turn's trace is filed under: the session's id, or a
    /// sub-agent's own (`{session}:{role}`).
    pub(super) trace_id: String,
    pub(super) origin: Option<Conversation>,
    pub(super) messages: Vec<Message>,
    pub(super) new_from: usize,
    /// A resumed turn's unfinished round: its number and the calls left.
    pub(super) pending: Option<(usize, Vec<ToolCall>)>,
    /// A resumed turn's decision for the call it paused on.
    pub(super) resolved: Option<super::round::Resumed>,
    pub(super) host: Arc<dyn TurnHost>,
    pub(super) cancel: CancellationToken,
    pub(super) system_context: Option<String>,
    pub(super) model: TurnModel,
}

/// One turn's input.
pub struct TurnRequest {
    pub session_id: SessionId,
    /// The chat and user the turn serves (tools such as `schedule` need it).
    pub origin: Option<Conversation>,
    pub history: Vec<Message>,
    pub input: Message,
    pub host: Arc<dyn TurnHost>,
    pub cancel: CancellationToken,
    /// Appended to the system prompt for this turn only (task state, execution
    /// state, correction rules, the memory note).
    pub system_context: Option<String>,
    /// The model for this turn (routing, `/model`); `None`: the agent's.
    pub model: Option<TurnModel>,
}

pub use crate::models::TurnModel;
