//! Who may talk to the agent: pairing, allowlist or open.

use crate::store::{Store, StoreError};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use switchboard_platform::{ChatKind, InboundMessage, Platform, UserId};

/// The access policy for unknown users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessPolicy {
    /// Unknown users get a one-time code the operator approves.
    Pairing,
    /// Only numeric ids in the platform's allowlist; empty admits nobody.
    Allowlist,
    /// Everyone.
    Open,
}

/// What to do with a message from this user.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Admit,
    /// Not admitted; tell them this (in DMs only).
    Refuse(String),
    /// Not admitted; say nothing (group chatter from strangers).
    Ignore,
}

pub(crate) struct AccessControl {
    pub policy: AccessPolicy,
    pub allowed: HashMap<Platform, HashSet<UserId>>,
    pub pairing_ttl: chrono::Duration,
}

impl AccessControl {
    pub(crate) async fn check(
        &self,
        store: &Store,
        msg: &InboundMessage,
    ) -> Result<Access, StoreError> {
        let platform = msg.chat.platform;
        // The console is the operator's own terminal.
        if platform == Platform::Console || self.policy == AccessPolicy::Open {
            return Ok(Access::Admit);
        }
        let listed = self
            .allowed
            .get(&platform)
            .is_some_and(|ids| ids.contains(&msg.user.id));
        if listed {
            return Ok(Access::Admit);
        }
        let dm = msg.chat_kind == ChatKind::Dm;
        match self.policy {
            AccessPolicy::Open => Ok(Access::Admit),
            AccessPolicy::Allowlist if dm => Ok(Access::Refuse(format!(
                "Sorry, this bot only answers people on its allowlist. Your user id is {}; the operator can add it.",
                msg.user.id
            ))),
            AccessPolicy::Allowlist => Ok(Access::Ignore),
            AccessPolicy::Pairing => {
                if store.is_admitted(platform, msg.user.id).await? {
                    return Ok(Access::Admit);
                }
                if !dm {
                    return Ok(Access::Ignore);
                }
                let (code, new) = store.pairing_code(platform, msg.user.id, &msg.user.display_name, self.pairing_ttl).await?;
                if new {
                    store
                        .record_event("pairing.requested", json!({ "platform": platform.as_str(), "user": msg.user.id.0, "code": code.code }))
                        .await;
                }
                Ok(Access::Refuse(format!(
                    "Hi! I don't know you yet. Your pairing code is **{}** (valid until {} UTC).\n\
                     Ask the operator to run `switchboard pair approve {}`, then write again.",
                    code.code,
                    code.expires_at.format("%H:%M"),
                    code.code
                )))
            }
        }
    }
}
