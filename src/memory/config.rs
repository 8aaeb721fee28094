//! Memory settings (`MEMORY_*`, `FEEDBACK_BUTTONS`), read with the rest of the config.

use crate::env::{flag, positive, ConfigError};
use crate::store::MemoryKind;
use std::time::Duration;

/// Long-term memory, recall and feedback settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    /// `MEMORY_ENABLED` (default true): recall, extraction, memory tools' storage.
    pub enabled: bool,
    /// `MEMORY_IDLE_SECS` (default 1800): a session quiet this long has its
    /// new messages extracted into memories.
    pub idle: Duration,
    /// `MEMORY_RECALL_TOKENS` (default 800): budget of the `<relevant-memories>` block.
    pub recall_tokens: usize,
    /// `MEMORY_LAYER_EVERY` (default 10): L1 atoms added before L2/L3 are refreshed.
    pub layer_every: u32,
    /// `MEMORY_RETENTION_DAYS` (default 90): ordinary memories unused this long are collected.
    pub retention_days: u32,
    /// `FEEDBACK_BUTTONS` (default true): 👍/👎 under final answers.
    pub feedback_buttons: bool,
    /// `MEMORY_IN_SHARED_CHATS` (default `preferences`): what may surface in groups.
    pub shared_chats: SharedRecall,
    /// `MEMORY_HARD_LIMIT_PCT` (default 150, at least 100): the hard limit of
    /// each kind as a percentage of its cap (the soft limit).
    pub hard_limit_pct: u32,
    /// `MEMORY_LEARN` (default `model`): how preferences are learned after
    /// each user message.
    pub learn: LearnMode,
    /// `MEMORY_LEARN_EVERY` (default 5): at most one learning model call per
    /// user per this many eligible messages.
    pub learn_every: u32,
    /// `REFLECTION_EVERY_HOURS` (default 6, `off`): how often a user active
    /// since their last reflection note gets a new one.
    pub reflection_every: Option<Duration>,
    /// `LIVE_STATE_CHECK` (default true): before a turn on a request that is
    /// not plain chat, one short model call names the kinds of live state
    /// it touches (off: only an open plan's steps do).
    pub live_check: bool,
    /// `EMBEDDINGS_*`: semantic recall; none: recall by words only.
    pub embeddings: Option<super::EmbeddingsConfig>,
}

/// How preferences are learned after each user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearnMode {
    /// A model call every `MEMORY_LEARN_EVERY` messages, the rules when it
    /// fails or breaks the JSON contract.
    Model,
    /// The keyword rules only (no model calls).
    Rules,
    /// Not at all (idle extraction still runs).
    Off,
}

/// Which of a user's memories may surface in a shared chat (group, channel,
/// thread), where everyone present reads the answer and the `/memory` reply.
/// Memory is per user across all their chats; this keeps what they said in a
/// direct message from being recited to a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedRecall {
    /// Only preferences (how to answer them), no facts, decisions or persona.
    Preferences,
    /// Everything, as in a direct message.
    All,
    /// Nothing: memory is used in direct messages only.
    None,
}

impl SharedRecall {
    /// Whether a memory of `kind` may surface in a chat that is (or is not) private.
    pub fn shows(self, private: bool, kind: MemoryKind) -> bool {
        private
            || match self {
                SharedRecall::All => true,
                SharedRecall::None => false,
                SharedRecall::Preferences => kind == MemoryKind::Preference,
            }
    }
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            enabled: true,
            idle: Duration::from_secs(1800),
            recall_tokens: 800,
            layer_every: 10,
            retention_days: 90,
            feedback_buttons: true,
            shared_chats: SharedRecall::Preferences,
            hard_limit_pct: 150,
            learn: LearnMode::Model,
            learn_every: 5,
            reflection_every: Some(Duration::from_secs(6 * 3600)),
            live_check: true,
            embeddings: None,
        }
    }
}

impl MemoryConfig {
    /// Reads the variables through `get` (trimmed, empty treated as unset).
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<MemoryConfig, ConfigError> {
        let d = MemoryConfig::default();
        Ok(MemoryConfig {
            enabled: flag(get, "MEMORY_ENABLED")?.unwrap_or(d.enabled),
            idle: positive(get, "MEMORY_IDLE_SECS")?
                .map(Duration::from_secs)
                .unwrap_or(d.idle),
            recall_tokens: positive(get, "MEMORY_RECALL_TOKENS")?
                .map(|v| usize::try_from(v).unwrap_or(usize::MAX))
                .unwrap_or(d.recall_tokens),
            layer_every: positive(get, "MEMORY_LAYER_EVERY")?
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .unwrap_or(d.layer_every),
            retention_days: positive(get, "MEMORY_RETENTION_DAYS")?
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .unwrap_or(d.retention_days),
            feedback_buttons: flag(get, "FEEDBACK_BUTTONS")?.unwrap_or(d.feedback_buttons),
            shared_chats: shared_recall(get)?.unwrap_or(d.shared_chats),
            hard_limit_pct: hard_limit_pct(get)?.unwrap_or(d.hard_limit_pct),
            learn: learn_mode(get)?.unwrap_or(d.learn),
            learn_every: positive(get, "MEMORY_LEARN_EVERY")?
                .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .unwrap_or(d.learn_every),
            reflection_every: reflection_every(get)?.unwrap_or(d.reflection_every),
            live_check: flag(get, "LIVE_STATE_CHECK")?.unwrap_or(d.live_check),
            embeddings: super::EmbeddingsConfig::from_lookup(get)?,
        })
    }
}

fn reflection_every(
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Option<Duration>>, ConfigError> {
    const VAR: &str = "REFLECTION_EVERY_HOURS";
    match get(VAR).map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") => Ok(None),
        Some("off") => Ok(Some(None)),
        Some(_) => {
            Ok(positive(get, VAR)?.map(|h| Some(Duration::from_secs(h.saturating_mul(3600)))))
        }
    }
}

fn learn_mode(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<LearnMode>, ConfigError> {
    const VAR: &str = "MEMORY_LEARN";
    match get(VAR).map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") => Ok(None),
        Some("model") => Ok(Some(LearnMode::Model)),
        Some("rules") => Ok(Some(LearnMode::Rules)),
        Some("off") => Ok(Some(LearnMode::Off)),
        Some(v) => Err(ConfigError::Invalid {
            var: VAR,
            problem: format!("{v:?} is not a known mode"),
            fix: "use model, rules or off",
        }),
    }
}

fn hard_limit_pct(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<u32>, ConfigError> {
    const VAR: &str = "MEMORY_HARD_LIMIT_PCT";
    match positive(get, VAR)? {
        None => Ok(None),
        Some(v) if (100..=1000).contains(&v) => Ok(u32::try_from(v).ok()),
        Some(v) => Err(ConfigError::Invalid {
            var: VAR,
            problem: format!("{v} is outside 100–1000"),
            fix: "give a percentage of the soft limit between 100 and 1000, e.g. 150",
        }),
    }
}

fn shared_recall(
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<SharedRecall>, ConfigError> {
    const VAR: &str = "MEMORY_IN_SHARED_CHATS";
    match get(VAR).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(v) => match v.as_str() {
            "" => Ok(None),
            "preferences" => Ok(Some(SharedRecall::Preferences)),
            "all" => Ok(Some(SharedRecall::All)),
            "none" => Ok(Some(SharedRecall::None)),
            _ => Err(ConfigError::Invalid {
                var: VAR,
                problem: format!("{v:?} is not a known policy"),
                fix: "use preferences, all or none",
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(pairs: &[(&str, &str)]) -> Result<MemoryConfig, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        MemoryConfig::from_lookup(&|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(read(&[]).unwrap(), MemoryConfig::default());
        let c = read(&[
            ("MEMORY_IDLE_SECS", "5"),
            ("FEEDBACK_BUTTONS", "off"),
            ("MEMORY_LAYER_EVERY", "3"),
        ])
        .unwrap();
        assert_eq!(
            (c.idle, c.feedback_buttons, c.layer_every),
            (Duration::from_secs(5), false, 3)
        );
        let e = read(&[("MEMORY_RECALL_TOKENS", "0")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("MEMORY_RECALL_TOKENS"), "{e}");
        let c = read(&[("MEMORY_IN_SHARED_CHATS", "None")]).unwrap();
        assert_eq!(c.shared_chats, SharedRecall::None);
        let e = read(&[("MEMORY_IN_SHARED_CHATS", "friends")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("MEMORY_IN_SHARED_CHATS"), "{e}");
        let e = read(&[("MEMORY_ENABLED", "maybe")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("MEMORY_ENABLED"), "{e}");
        let c = read(&[("MEMORY_HARD_LIMIT_PCT", "200")]).unwrap();
        assert_eq!(c.hard_limit_pct, 200);
        let e = read(&[("MEMORY_HARD_LIMIT_PCT", "50")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("MEMORY_HARD_LIMIT_PCT"), "{e}");
        let c = read(&[("MEMORY_LEARN", "Rules"), ("MEMORY_LEARN_EVERY", "3")]).unwrap();
        assert_eq!((c.learn, c.learn_every), (LearnMode::Rules, 3));
        assert!(read(&[("MEMORY_LEARN", "sometimes")]).is_err());
        assert_eq!(
            read(&[("REFLECTION_EVERY_HOURS", "off")])
                .unwrap()
                .reflection_every,
            None
        );
        assert_eq!(
            read(&[("REFLECTION_EVERY_HOURS", "2")])
                .unwrap()
                .reflection_every,
            Some(Duration::from_secs(7200))
        );
        assert!(read(&[("REFLECTION_EVERY_HOURS", "soon")]).is_err());
    }
}
