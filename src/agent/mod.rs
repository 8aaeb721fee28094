//! The agent runtime: one turn of the ReAct loop, its events, guards and traces.

mod arguments;
mod compaction;
mod deadline;
mod doom_loop;
mod events;
mod foreground;
mod intent;
mod intent_check;
mod kept_facts;
mod live_roles;
mod model_call;
mod produced;
mod redact;
mod requests;
mod results;
mod role_memory;
mod roles;
mod round;
mod runtime;
mod scratchpad;
mod start;
mod subagent;
mod tool_fields;
mod turn;

pub use crate::domain::plan::{
    Phase, Plan, PlanError, PlanStep, StepDraft, StepOutcome, StepState, MAX_PLAN_STEPS,
};
pub use crate::media::Images;
pub use crate::tools::{Asked, NestedResume, Pause, Resolution, TurnCheckpoint, TurnHost};
pub use compaction::{
    clip_words, compaction_point, key_fields, reserve, summarize_head, summary_messages,
    tail_start, threshold, transcript, Compacted, FoldedHead, MAX_CONTEXT_MESSAGES, SUMMARY_MARK,
};
pub use events::{RuntimeEvent, StopReason, TurnOutcome};
pub use intent::{IntentRule, IntentRules, IntentRulesError, Requirement, MAX_CORRECTIONS};
pub use kept_facts::KEPT_MARK;
pub use live_roles::LiveDelegates;
pub use roles::{builtin_roles, find_role, load_roles, Role, SUBAGENT_MAX_ROUNDS};
pub use runtime::{
    Agent, AgentConfig, ResumeRequest, TurnModel, TurnRequest, DEFAULT_TOOL_TIMEOUT,
};
pub use subagent::{delegate_tools, NobodyToAsk, WRITES};
pub use tool_fields::{field_values, KeyFields};
