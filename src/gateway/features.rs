//! What the gateway offers a chat besides the agent's turn: skills, media,
//! the model catalogue, the tools added from the chat and who may add them,
//! memory extraction, and the defaults a session has until it chooses.

use crate::gateway::delivery::activity::Verbosity;
use crate::gateway::session::queue_mode::QueueMode;
use crate::memory::Extractor;
use std::sync::Arc;

/// The services and settings behind the chat's features.
pub(crate) struct Features {
    pub(crate) skills: Arc<crate::skills::SkillLibrary>,
    /// Photos, voice notes and files users send.
    pub(crate) media: Arc<crate::media::Media>,
    /// The status reactions shown on users' messages (`REACTIONS`).
    pub(crate) status: crate::gateway::delivery::reactions::StatusBoard,
    /// The model catalogue, `/model` choices and routing.
    pub(crate) models: Arc<crate::models::Models>,
    /// Extracts long-term memories (with the agent's provider); its book is
    /// the users' memories.
    pub(crate) extractor: Extractor,
    /// The tools added from the chat, and who may change them.
    pub(crate) grown: Arc<crate::tools::GrownTools>,
    pub(crate) tool_builders: crate::tools::ToolBuilders,
    /// Whether users may set the agent's identity for their own DMs.
    pub(crate) identity_user_edits: bool,
    /// The default verbosity of a session that did not choose one.
    pub(crate) verbosity: Verbosity,
    /// The default queue mode of a session that did not choose one.
    pub(crate) queue_mode: QueueMode,
}
