//! The agent runtime: one turn of the ReAct loop, its events, guards and traces.

mod compaction;
mod deadline;
mod doom_loop;
mod events;
mod host;
mod intent;
mod intent_check;
mod model_call;
mod redact;
mod results;
mod round;
mod runtime;
mod scratchpad;
mod subagent;
mod turn;
mod vision;

pub use compaction::{
    clip_words, compaction_point, key_fields, reserve, summarize_head, summary_messages,
    tail_start, threshold, transcript, Compacted, FoldedHead, MAX_CONTEXT_MESSAGES, SUMMARY_MARK,
};
pub use events::{RuntimeEvent, StopReason, TurnOutcome};
pub use host::{Asked, Pause, Resolution, TurnCheckpoint, TurnHost};
pub use intent::{IntentRule, IntentRules, IntentRulesError, Requirement, MAX_CORRECTIONS};
pub use runtime::{Agent, AgentConfig, ResumeRequest, TurnRequest, DEFAULT_TOOL_TIMEOUT};
pub use subagent::{delegate_tools, role, NobodyToAsk, Role, ROLES, SUBAGENT_MAX_ROUNDS};
pub use vision::Images;
