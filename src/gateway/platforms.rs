//! The platforms this gateway talks to: their adapters, the operator's
//! per-chat settings (`CHATS_FILE`) and each thread's channel, for the
//! settings' fallback to the channel.

use crate::chats::{ChatBindings, ChatSettings};
use crate::gateway::parents::Parents;
use crate::loaded::Live;
use crate::store::SessionKey;
use std::collections::HashMap;
use std::sync::Arc;
use switchboard_platform::{ChatAddress, Platform, PlatformAdapter};

/// The adapters by platform, and what the operator set per chat.
pub(crate) struct Platforms {
    pub(crate) adapters: HashMap<Platform, Arc<dyn PlatformAdapter>>,
    /// Per-chat settings (`CHATS_FILE`), swapped whole on reload.
    pub(crate) chats: Arc<Live<ChatBindings>>,
    /// Each thread's channel, for the settings' fallback to the channel.
    pub(crate) parents: Parents,
}

impl Platforms {
    /// The adapter of `platform`, if this process runs one.
    pub(crate) fn adapter(&self, platform: Platform) -> Option<Arc<dyn PlatformAdapter>> {
        self.adapters.get(&platform).cloned()
    }

    /// The operator's settings for the chat (or topic) of `key`, if bound;
    /// a thread that is a chat of its own falls back to its channel's.
    /// Read from the file's version in force now (see `crate::loaded::Live`).
    pub(crate) fn chat_settings(&self, key: &SessionKey) -> Option<ChatSettings> {
        self.chats
            .get()
            .get(
                &ChatAddress::new(key.platform, key.chat, key.thread),
                self.parents.of(key.platform, key.chat),
            )
            .cloned()
    }

    /// Whether the person on `platform` is the operator at this machine (see
    /// [`switchboard_platform::Capabilities::local_operator`]).
    pub(crate) fn local_operator(&self, platform: Platform) -> bool {
        self.adapters
            .get(&platform)
            .is_some_and(|a| a.capabilities().local_operator)
    }
}
