//! Reflection notes: every `REFLECTION_EVERY_HOURS` (6) for each user active
//! since their last note, one side call writes a short private note — what
//! changed in their goals, open loops, risks, and, beside the previous note
//! it is shown, what is different from it — kept as a `reflection` memory
//! (its own cap) and shown in that user's direct-message system prompt; a
//! note with an open loop or a risk may schedule an opt-in check-in. A note
//! that finds something which should change the user's profile proposes it
//! (`profile_update`): kept as a pending suggestion, shown verbatim on a card
//! with Apply / Dismiss in their direct messages (the gateway's
//! `profile_card`), never proposed twice.

use super::extract::transcript;
use super::model::{clip, complete, json_object};
use super::{Extractor, MemoryError};
use crate::store::{MemoryKind, MemoryOwner, MemoryRecord, NewMemory};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Users considered per pass at most.
const REFLECT_BATCH: u32 = 20;
/// Messages since the last note a reflection reads at most.
const REFLECT_MESSAGES: u32 = 40;
const ITEM_CHARS: usize = 200;
const MAX_ITEMS: usize = 3;

const PROMPT: &str = r#"You write a short private reflection note about the USER for the assistant's own use, from their recent conversations.
Reply with ONLY a JSON object, no prose, exactly of this shape:
{"note": "<at most three sentences: what changed in the user's goals or situation>", "open_loops": ["<something promised or unfinished>"], "risks": ["<something that may go wrong for the user>"], "changed": "<one sentence: what is different from your previous note, if you are shown one; empty otherwise>", "profile_update": "<one sentence to keep in the user's profile as a lasting preference or fact about them, only when these conversations show their profile should change (a new stable preference, a changed situation); empty otherwise>"}
At most 3 open loops and 3 risks; empty lists when there are none. Write in the user's language. Never secrets, never prices or trades."#;

/// Heads the previous note in the reflection's input.
const PREVIOUS_MARK: &str = "[Your previous note on this user";

/// A note written for one user.
#[derive(Debug, Clone, PartialEq)]
pub struct Reflection {
    pub owner: MemoryOwner,
    pub memory: i64,
    pub note: String,
    pub open_loops: Vec<String>,
    pub risks: Vec<String>,
    /// What differs from the user's previous note (empty for a first note,
    /// or when nothing did).
    pub changed: String,
    /// The check-in it scheduled (see `checkins.rs`), if any.
    pub checkin: Option<crate::domain::ScheduleId>,
    /// The profile change it proposed (new: not proposed before, not
    /// already in the profile), pending the user's Apply / Dismiss.
    pub suggestion: Option<String>,
}

impl Extractor {
    /// Writes the notes that are due at `now`: users active since a note at
    /// least `every` old. A user the reflector sees for the first time starts
    /// their clock (no call). Each note is claimed once across processes.
    pub async fn reflect_due(
        &self,
        every: chrono::Duration,
        now: DateTime<Utc>,
    ) -> Result<Vec<Reflection>, MemoryError> {
        let store = self.book().store();
        let mut out = Vec::new();
        for (owner, was) in store
            .memories()
            .reflection_candidates(now - every, REFLECT_BATCH)
            .await?
        {
            let Some(was) = was else {
                store.memories().start_reflection_clock(owner, now).await?;
                continue;
            };
            if !store.memories().claim_reflection(owner, was, now).await? {
                continue;
            }
            match self.reflect(owner, was, now).await {
                Ok(Some(mut r)) => {
                    r.checkin = super::schedule_checkin(store, &r, now)
                        .await
                        .unwrap_or_else(|e| {
                            tracing::warn!(error = %e, "could not schedule a check-in");
                            None
                        });
                    out.push(r);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "reflection failed"),
            }
        }
        Ok(out)
    }

    async fn reflect(
        &self,
        owner: MemoryOwner,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Option<Reflection>, MemoryError> {
        let messages = self
            .book()
            .store()
            .memories()
            .messages_of_user_since(owner, since, REFLECT_MESSAGES)
            .await?;
        let Some(transcript) = transcript(&messages) else {
            return Ok(None);
        };
        let input = match self.previous_note(owner, now).await? {
            Some(previous) => format!("{previous}\n\n{transcript}"),
            None => transcript,
        };
        let reply = complete(self.provider().as_ref(), PROMPT, input).await?;
        let Parsed {
            note,
            open_loops,
            risks,
            changed,
            profile_update,
        } = parse_reflection(&reply)?;
        let mut content = note.clone();
        if !changed.is_empty() {
            content.push_str(&format!(" Changed since the last note: {changed}"));
        }
        if !open_loops.is_empty() {
            content.push_str(&format!(" Open loops: {}.", open_loops.join("; ")));
        }
        if !risks.is_empty() {
            content.push_str(&format!(" Risks: {}.", risks.join("; ")));
        }
        let memory = NewMemory {
            kind: MemoryKind::Reflection,
            content,
            source_ref: format!("reflection:{}", now.format("%Y-%m-%dT%H:%MZ")),
            importance: 0.6,
            expires_at: None,
        };
        let saved = self.book().save(owner, memory, now).await?;
        let suggestion = self.propose(owner, &profile_update, now).await;
        Ok(Some(Reflection {
            owner,
            memory: saved.id(),
            note,
            open_loops,
            risks,
            changed,
            checkin: None,
            suggestion,
        }))
    }

    /// Keeps `update` as a pending profile suggestion of `owner` unless it
    /// is empty, already in their profile, or was proposed before (then or
    /// on failure: `None`).
    async fn propose(
        &self,
        owner: MemoryOwner,
        update: &str,
        now: DateTime<Utc>,
    ) -> Option<String> {
        if update.is_empty() {
            return None;
        }
        let store = self.book().store();
        let folded = crate::store::suggestion_fingerprint(update);
        let kinds = [
            MemoryKind::Preference,
            MemoryKind::Persona,
            MemoryKind::Fact,
        ];
        match store.memories().of(owner, &kinds, 200, now).await {
            Ok(kept)
                if kept
                    .iter()
                    .any(|m| crate::store::suggestion_fingerprint(&m.content) == folded) =>
            {
                return None
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not read the profile for a suggestion"),
        }
        let mut id = uuid::Uuid::new_v4().simple().to_string();
        id.truncate(12);
        match store.suggestions().propose(&id, owner, update, now).await {
            Ok(true) => Some(update.to_owned()),
            Ok(false) => None,
            Err(e) => {
                tracing::warn!(error = %e, "could not keep a profile suggestion");
                None
            }
        }
    }

    /// The owner's latest note, headed for the reflection's input.
    async fn previous_note(
        &self,
        owner: MemoryOwner,
        now: DateTime<Utc>,
    ) -> Result<Option<String>, MemoryError> {
        let latest = self
            .book()
            .store()
            .memories()
            .of(owner, &[MemoryKind::Reflection], 1, now)
            .await?;
        Ok(latest.first().map(|m| {
            format!(
                "{PREVIOUS_MARK}, written {} — compare with it]\n{}",
                m.updated_at.format("%Y-%m-%d %H:%M UTC"),
                m.content
            )
        }))
    }
}

/// A reflection reply, read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) note: String,
    pub(crate) open_loops: Vec<String>,
    pub(crate) risks: Vec<String>,
    pub(crate) changed: String,
    /// A proposed profile change (empty for none).
    pub(crate) profile_update: String,
}

/// Reads a reflection reply under its contract.
pub(crate) fn parse_reflection(reply: &str) -> Result<Parsed, MemoryError> {
    let map = json_object(reply)?;
    let note = map
        .get("note")
        .and_then(Value::as_str)
        .map(|s| clip(s.trim(), ITEM_CHARS * 3))
        .filter(|s| !s.is_empty())
        .ok_or_else(|| MemoryError::Contract("`note` must be a non-empty string".into()))?;
    let list = |key: &str| -> Vec<String> {
        map.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| clip(s.trim(), ITEM_CHARS))
                    .filter(|s| !s.is_empty())
                    .take(MAX_ITEMS)
                    .collect()
            })
            .unwrap_or_default()
    };
    let text = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .map(|s| clip(s.trim(), ITEM_CHARS))
            .unwrap_or_default()
    };
    Ok(Parsed {
        note,
        open_loops: list("open_loops"),
        risks: list("risks"),
        changed: text("changed"),
        profile_update: text("profile_update"),
    })
}

/// The system-context section of the user's latest note.
pub fn reflection_section(m: &MemoryRecord) -> String {
    format!(
        "[Reflection — your latest private note on this user ({}); use it to follow up, never quote it]\n{}",
        m.updated_at.format("%Y-%m-%d"),
        m.content
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_needs_a_note_and_clips_the_lists() {
        let parsed = parse_reflection(
            r#"{"note": "Started a new job.", "open_loops": ["send the CV", "", "a", "b", "c"], "risks": []}"#,
        )
        .unwrap();
        assert_eq!(parsed.note, "Started a new job.");
        assert_eq!(parsed.open_loops, ["send the CV", "a", "b"]);
        assert!(parsed.risks.is_empty());
        assert_eq!(parsed.changed, "", "optional");
        let parsed = parse_reflection(
            r#"{"note": "N.", "open_loops": [], "risks": [], "changed": " Now works from home. "}"#,
        )
        .unwrap();
        assert_eq!(parsed.changed, "Now works from home.");
        assert_eq!(parsed.profile_update, "", "optional");
        let parsed = parse_reflection(
            r#"{"note": "N.", "open_loops": [], "risks": [], "profile_update": " Works from home on Fridays. "}"#,
        )
        .unwrap();
        assert_eq!(parsed.profile_update, "Works from home on Fridays.");
        assert!(parse_reflection(r#"{"open_loops": []}"#).is_err());
        assert!(parse_reflection("no").is_err());
    }
}
