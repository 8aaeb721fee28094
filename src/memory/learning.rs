//! Preference learning on every message: after each eligible user message,
//! one model call per user per `MEMORY_LEARN_EVERY` messages reads the latest
//! ones (the keyword rules when the call fails or breaks the JSON contract, or
//! when `MEMORY_LEARN=rules`), and each preference found is saved or merged
//! with its frequency statistics (times seen, last seen, confidence).

use super::config::LearnMode;
use super::filter::check_memory;
use super::learn_rules::{rule_preferences, RULE_CONFIDENCE};
use super::model::{complete, json_object};
use super::{Extractor, MemoryError, Saved};
use crate::store::{MemoryKind, MemoryOwner, NewMemory};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Messages with fewer letters and digits than this are not learned from.
pub const LEARN_MIN_CHARS: usize = 6;
/// Preferences accepted from one call at most.
const MAX_LEARNED: usize = 5;
const MESSAGE_CHARS: usize = 1_000;

const PROMPT: &str = r#"You learn the USER's lasting preferences from their latest messages to an assistant.
Reply with ONLY a JSON object, no prose, exactly of this shape:
{"preferences": [{"content": "<one self-contained sentence>", "confidence": <0.0-1.0>}]}
A preference is a stable taste, working style, format or language they want, constraint, habit or thing to avoid.
Write each content in the user's language, in the third person ("The user prefers ..."), at most 200 characters.
NEVER include: trades or purchases, one-off states, prices or news, secrets (passwords, keys, tokens), facts about other people, what they merely asked about.
If nothing qualifies, reply {"preferences": []}."#;

/// How a message was learned from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LearnedBy {
    /// Not learned from: learning off, a command, a very short message.
    Skipped,
    /// Counted toward the next model call, which is not due yet.
    Pending,
    Model,
    /// The keyword rules (by configuration, or the model call failed).
    Rules,
}

/// What learning from one message did.
#[derive(Debug, Clone, PartialEq)]
pub struct LearnReport {
    pub by: LearnedBy,
    /// Model calls made (0 or 1).
    pub model_calls: u32,
    /// Preferences added or observed again.
    pub saved: Vec<Saved>,
}

impl LearnReport {
    fn new(by: LearnedBy) -> LearnReport {
        LearnReport {
            by,
            model_calls: 0,
            saved: Vec::new(),
        }
    }
}

/// Whether a user message is worth learning from: not a command, not a
/// notification, and not very short.
pub fn eligible(text: &str) -> bool {
    let text = text.trim();
    !text.starts_with('/')
        && !text.starts_with("[SYSTEM NOTIFICATION")
        && text.chars().filter(|c| c.is_alphanumeric()).count() >= LEARN_MIN_CHARS
}

impl Extractor {
    /// Learns from one user `message` (the session's `earlier` user messages,
    /// oldest first, give the model call its context).
    pub async fn learn(
        &self,
        owner: MemoryOwner,
        source_ref: &str,
        earlier: &[String],
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<LearnReport, MemoryError> {
        let config = self.book().config();
        if !config.enabled || config.learn == LearnMode::Off || !eligible(message) {
            return Ok(LearnReport::new(LearnedBy::Skipped));
        }
        if config.learn == LearnMode::Rules {
            let mut report = LearnReport::new(LearnedBy::Rules);
            let found = rule_preferences(message)
                .into_iter()
                .map(|p| (p, RULE_CONFIDENCE))
                .collect();
            self.keep(owner, source_ref, found, now, &mut report)
                .await?;
            return Ok(report);
        }
        let every = config.learn_every;
        if !self
            .book()
            .store()
            .memories()
            .count_learning_message(owner, every)
            .await?
        {
            return Ok(LearnReport::new(LearnedBy::Pending));
        }
        let take = usize::try_from(every)
            .unwrap_or(usize::MAX)
            .saturating_sub(1);
        let mut batch: Vec<&str> = earlier
            .iter()
            .map(String::as_str)
            .filter(|m| eligible(m))
            .collect();
        batch.drain(..batch.len().saturating_sub(take));
        batch.push(message);
        let transcript: String = batch
            .iter()
            .map(|m| format!("[user] {}\n", super::model::clip(m.trim(), MESSAGE_CHARS)))
            .collect();
        let reply = complete(self.provider().as_ref(), PROMPT, transcript).await;
        let (by, found) = match reply.and_then(|r| parse_learned(&r)) {
            Ok(found) => (LearnedBy::Model, found),
            Err(e) => {
                tracing::info!(error = %e, "preference learning fell back to the rules");
                let found = batch
                    .iter()
                    .flat_map(|m| rule_preferences(m))
                    .map(|p| (p, RULE_CONFIDENCE))
                    .collect();
                (LearnedBy::Rules, found)
            }
        };
        let mut report = LearnReport {
            by,
            model_calls: 1,
            saved: Vec::new(),
        };
        self.keep(owner, source_ref, found, now, &mut report)
            .await?;
        Ok(report)
    }

    /// Saves each preference (merging repeats) and records the observation.
    async fn keep(
        &self,
        owner: MemoryOwner,
        source_ref: &str,
        found: Vec<(String, f64)>,
        now: DateTime<Utc>,
        report: &mut LearnReport,
    ) -> Result<(), MemoryError> {
        for (content, confidence) in found {
            if check_memory(&content).is_err() {
                continue;
            }
            let memory = NewMemory {
                kind: MemoryKind::Preference,
                content,
                source_ref: source_ref.to_owned(),
                importance: confidence,
                expires_at: None,
            };
            let saved = match self.book().save(owner, memory, now).await {
                Ok(saved) => saved,
                Err(MemoryError::Full(_)) => continue,
                Err(e) => return Err(e),
            };
            let first = matches!(saved, Saved::Added(_));
            self.book()
                .store()
                .memories()
                .observe(owner, saved.id(), confidence, first, now)
                .await?;
            report.saved.push(saved);
        }
        Ok(())
    }
}

/// Reads a learning reply under its contract: `{"preferences": [...]}` and
/// nothing else; bad items are dropped one by one.
pub(crate) fn parse_learned(reply: &str) -> Result<Vec<(String, f64)>, MemoryError> {
    let map = json_object(reply)?;
    if let Some(key) = map.keys().find(|k| k.as_str() != "preferences") {
        return Err(MemoryError::Contract(format!("unexpected key {key:?}")));
    }
    let Some(Value::Array(items)) = map.get("preferences") else {
        return Err(MemoryError::Contract(
            "`preferences` must be an array".into(),
        ));
    };
    Ok(items
        .iter()
        .filter_map(|item| {
            let content = item.get("content")?.as_str()?.trim();
            let confidence = match item.get("confidence") {
                None => 0.6,
                Some(v) => v.as_f64().filter(|c| (0.0..=1.0).contains(c))?,
            };
            (!content.is_empty() && content.chars().count() <= 300)
                .then(|| (content.to_owned(), confidence))
        })
        .take(MAX_LEARNED)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_notifications_and_short_messages_are_skipped() {
        assert!(!eligible("/memory"));
        assert!(!eligible("ok 👍"));
        assert!(!eligible("谢谢"));
        assert!(!eligible("[SYSTEM NOTIFICATION] task done"));
        assert!(eligible("I prefer short answers"));
        assert!(eligible("我不喜欢表格形式"));
    }

    #[test]
    fn the_reply_contract_is_strict_about_the_envelope_only() {
        let ok = parse_learned(
            r#"{"preferences": [{"content": "The user prefers tea", "confidence": 0.8}, {"content": ""}, {"confidence": 2}]}"#,
        )
        .unwrap();
        assert_eq!(ok, [("The user prefers tea".to_owned(), 0.8)]);
        assert!(parse_learned("The user prefers tea").is_err());
        assert!(parse_learned(r#"{"memories": []}"#).is_err());
    }
}
