//! Long-term memory per user and the context it adds to turns: extraction of
//! L1 atoms (and L2/L3 layers) by the model, recall with mixed ranking, task
//! and execution state per session, and feedback-driven correction rules.
//!
//! Memory belongs to one user (platform + user id) and is never shared: every
//! store query is scoped by a [`MemoryOwner`](crate::store::MemoryOwner).

mod book;
mod checkins;
mod config;
mod extract;
mod feedback;
mod filter;
mod gc;
mod inject;
mod layers;
mod learn_rules;
mod learning;
mod model;
mod recall;
mod reflect;
pub mod semantic;
mod state;
mod sweep;
mod terms;

pub use book::{MemoryBook, Saved};
pub use checkins::{parse_time as parse_checkin_time, schedule_checkin, CHECKIN_GAP_HOURS};
pub use config::{LearnMode, MemoryConfig, SharedRecall};
pub use extract::{ExtractReport, Extractor, EXTRACTION_LEASE, EXTRACT_MESSAGES};
pub use feedback::{
    distill_rules, feedback_buttons, new_feedback_id, parse_feedback, FEEDBACK_WINDOW_DAYS,
    MAX_RULES,
};
pub use filter::{check_memory, check_secret, is_dynamic, Rejection};
pub use gc::{collect_kind, value as memory_value, victims, Limits};
pub use inject::{rules_section, system_context, unwrap, wrap, MEMORY_NOTE};
pub use learn_rules::rule_preferences;
pub use learning::{eligible as learnable, LearnReport, LearnedBy, LEARN_MIN_CHARS};
pub use recall::{
    memory_line, mixed_score, recall, recall_semantic, recall_visible, recency, record_access,
    RecallHit, HALF_LIFE_DAYS,
};
pub use reflect::{reflection_section, Reflection};
pub use semantic::{EmbeddingsConfig, Semantic};
pub use state::{ExecStatus, ExecutionState, Step, TaskState};
pub use sweep::sweep;
pub use terms::{codes, query_terms, similarity, terms};

use crate::llm::ProviderError;
use crate::store::StoreError;

/// A memory operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the model call failed: {0}")]
    Model(#[from] ProviderError),
    #[error("the model broke the reply contract: {0}")]
    Contract(String),
    /// The kind is at its hard limit and everything in it is pinned.
    #[error("no room for another {0} memory: every one kept is pinned (unpin or forget one)")]
    Full(&'static str),
}
