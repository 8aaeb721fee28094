//! Who may talk to the agent: pairing, allowlist or open.

use crate::store::{Store, StoreError};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};
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

/// How long a user this process saw admitted stays admitted while the
/// database cannot be asked (an outage), so paired users keep being answered.
/// Revocations take effect at once whenever the database answers.
const OUTAGE_GRACE: Duration = Duration::from_secs(3600);

pub(crate) struct AccessControl {
    policy: AccessPolicy,
    allowed: HashMap<Platform, HashSet<UserId>>,
    pairing_ttl: chrono::Duration,
    /// When each paired user was last found admitted in the database.
    seen_admitted: Mutex<HashMap<(Platform, UserId), Instant>>,
}

impl AccessControl {
    pub(crate) fn new(
        policy: AccessPolicy,
        allowed: HashMap<Platform, HashSet<UserId>>,
        pairing_ttl: chrono::Duration,
    ) -> AccessControl {
        AccessControl {
            policy,
            allowed,
            pairing_ttl,
            seen_admitted: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the paired user is admitted; during a database outage (or with
    /// `storage_down`, without asking), whether the database said so within
    /// the last [`OUTAGE_GRACE`].
    async fn paired(
        &self,
        store: &Store,
        who: (Platform, UserId),
        storage_down: bool,
    ) -> Result<bool, StoreError> {
        if storage_down && self.seen_recently(who) {
            return Ok(true);
        }
        let result = store.is_admitted(who.0, who.1).await;
        let mut seen = self.seen_admitted.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(true) => {
                seen.insert(who, Instant::now());
                Ok(true)
            }
            Ok(false) => {
                seen.remove(&who);
                Ok(false)
            }
            Err(e) if seen.get(&who).is_some_and(|t| t.elapsed() < OUTAGE_GRACE) => {
                tracing::warn!(error = %e, platform = %who.0, user = %who.1, "storage unavailable; admitting a user seen admitted recently");
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    fn seen_recently(&self, who: (Platform, UserId)) -> bool {
        let seen = self.seen_admitted.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(&who).is_some_and(|t| t.elapsed() < OUTAGE_GRACE)
    }

    /// With `storage_down`, users this process saw admitted within the last
    /// hour are admitted without asking the database.
    /// The operator at the machine (`local_operator`) is always admitted.
    pub(crate) async fn check(
        &self,
        store: &Store,
        msg: &InboundMessage,
        local_operator: bool,
        storage_down: bool,
    ) -> Result<Access, StoreError> {
        let platform = msg.chat.platform;
        if local_operator || self.policy == AccessPolicy::Open {
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
                if self.paired(store, (platform, msg.user.id), storage_down).await? {
                    return Ok(Access::Admit);
                }
                if !dm {
                    return Ok(Access::Ignore);
                }
                let (code, new) = store.pairing_code(platform, msg.user.id, &msg.user.display_name, self.pairing_ttl).await?;
                if new {
                    store
                        .audit().record("pairing.requested", json!({ "platform": platform.as_str(), "user": msg.user.id.0, "code": code.code }))
                        .await;
                    // Where to tell them once the operator approves.
                    if let Err(e) = store.set_pairing_chat(&code.code, msg.chat.chat).await {
                        tracing::warn!(error = %e, code = %code.code, "could not record the chat of a pairing request; the user will not be told of the approval");
                    }
                    tracing::info!(
                        platform = %platform,
                        user = %msg.user.id,
                        name = ?msg.user.display_name,
                        code = %code.code,
                        "pairing requested: admit with `switchboard pair approve {}`",
                        code.code
                    );
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
