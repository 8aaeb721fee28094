//! What a chat's settings (`CHATS_FILE`) change in a turn: the model (when
//! the session did not choose one), the tools it may use, and instructions
//! added to the system prompt.

use crate::domain::SessionKey;
use crate::gateway::Inner;
use crate::models::{RouteInput, Selected};
use crate::store::SessionId;
use crate::tools::{HTTP_TOOL, SCRIPT_TOOL};
use std::sync::Arc;
use switchboard_platform::User;

/// The model and tools for a turn of `session` in the chat of `key`.
pub(in crate::gateway) async fn select(
    inner: &Inner,
    key: &SessionKey,
    session: &SessionId,
    input: Option<RouteInput<'_>>,
) -> Selected {
    let chat = inner.chat_settings(key);
    let mut selected = inner
        .features
        .models
        .select(
            session,
            chat.as_ref().and_then(|c| c.model.as_deref()),
            input,
        )
        .await;
    if let Some(chat) = chat.filter(|c| !c.tools.is_open()) {
        selected.model.tools = Some(Arc::clone(&chat.tools));
    }
    selected
}

/// Leaves the tools that change tools (`http_tool`, `script_tool`,
/// `install_skill` and its `preview_skill`) out of a
/// turn unless `user` may change tools (`TOOL_BUILDERS`); a turn nobody
/// asked for (a schedule, a notification) never has them.
pub(in crate::gateway) fn for_builders(
    inner: &Inner,
    selected: &mut Selected,
    user: Option<&User>,
) {
    if user.is_some_and(|u| inner.features.tool_builders.allows(u)) {
        return;
    }
    let mut policy = selected.model.tools.as_deref().cloned().unwrap_or_default();
    policy
        .deny
        .extend([HTTP_TOOL.to_owned(), SCRIPT_TOOL.to_owned()]);
    policy.deny.extend([
        crate::tools::INSTALL_SKILL.to_owned(),
        "preview_skill".to_owned(),
    ]);
    selected.model.tools = Some(Arc::new(policy));
}

/// The chat's instructions, as a section of the system context.
pub(in crate::gateway) fn instructions(inner: &Inner, key: &SessionKey) -> Option<String> {
    inner
        .chat_settings(key)
        .and_then(|c| c.system_prompt)
        .map(|p| format!("## Instructions for this chat (from the operator)\n{p}"))
}

/// Whether long-term memories are recalled in the chat of `key`.
pub(in crate::gateway) fn memory_on(inner: &Inner, key: &SessionKey) -> bool {
    inner
        .chat_settings(key)
        .and_then(|c| c.memory)
        .unwrap_or(true)
}

/// Whether every message in the chat of `key` is answered, mentioned or not.
pub(in crate::gateway) fn free_response(inner: &Inner, key: &SessionKey) -> bool {
    inner.chat_settings(key).is_some_and(|c| c.free_response)
}
