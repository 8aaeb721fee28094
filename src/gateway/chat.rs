//! What a chat's settings (`CHATS_FILE`) change in a turn: the model (when
//! the session did not choose one), the tools it may use, and instructions
//! added to the system prompt. A turn reads them once, when it begins
//! (`Origin::chat`), and uses that copy throughout.

use crate::chats::ChatSettings;
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
    select_in(inner, inner.chat_settings(key).as_ref(), session, input).await
}

/// The model and tools for a turn of `session` in a chat whose settings are
/// `chat` (the turn's copy of them).
pub(in crate::gateway) async fn select_in(
    inner: &Inner,
    chat: Option<&ChatSettings>,
    session: &SessionId,
    input: Option<RouteInput<'_>>,
) -> Selected {
    let mut selected = inner
        .features
        .models
        .select(session, chat.and_then(|c| c.model.as_deref()), input)
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

/// The chat's instructions (from the turn's copy of its settings), as a
/// section of the system context.
pub(in crate::gateway) fn instructions(chat: Option<&ChatSettings>) -> Option<String> {
    chat.and_then(|c| c.system_prompt.as_deref())
        .map(|p| format!("## Instructions for this chat (from the operator)\n{p}"))
}

/// Whether long-term memories are recalled in a chat whose settings are `chat`.
pub(in crate::gateway) fn memory_on(chat: Option<&ChatSettings>) -> bool {
    chat.and_then(|c| c.memory).unwrap_or(true)
}

/// Whether every message in the chat of `key` is answered, mentioned or not.
pub(in crate::gateway) fn free_response(inner: &Inner, key: &SessionKey) -> bool {
    inner.chat_settings(key).is_some_and(|c| c.free_response)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::loaded::Live;
    use switchboard_platform::{ChatAddress, ChatId, Platform};

    fn bindings(dir: &std::path::Path, prompt: &str, memory: bool) -> crate::chats::ChatBindings {
        let path = dir.join(format!("{prompt}.json"));
        let file = serde_json::json!({"chats": {"console:1": {"system_prompt": prompt, "memory": memory}}});
        std::fs::write(&path, file.to_string()).unwrap();
        let (bindings, problems) = crate::chats::load(&path, &[]);
        assert!(problems.is_empty(), "{problems:?}");
        bindings
    }

    #[test]
    fn a_swap_mid_turn_leaves_the_turns_copy_as_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let live = Live::new(bindings(dir.path(), "first", true));
        let at = ChatAddress::new(Platform::Console, ChatId(1), None);
        // The turn's copy, as `origin_of` takes it when the turn begins.
        let copy = live.get().get(&at, None).cloned();
        live.set(bindings(dir.path(), "second", false));
        // Read later in the same turn: still the first version, whole.
        assert!(instructions(copy.as_ref()).unwrap().ends_with("\nfirst"));
        assert!(memory_on(copy.as_ref()));
        // The next turn's copy is the second version, whole.
        let next = live.get().get(&at, None).cloned();
        assert!(instructions(next.as_ref()).unwrap().ends_with("\nsecond"));
        assert!(!memory_on(next.as_ref()));
    }
}
