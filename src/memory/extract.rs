//! Extraction of L1 atoms (preferences, decisions) from a conversation by the
//! model, under a strict JSON contract, with forbidden content filtered and
//! duplicates merged; L2/L3 refreshed once enough new L1 atoms arrived.

use super::book::{MemoryBook, Saved};
use super::filter::check_memory;
use super::layers::refresh_layers;
use super::model::{clip, complete, json_object};
use super::MemoryError;
use crate::llm::{Message, Provider, Role};
use crate::store::{IdleSession, MemoryKind, MemoryOwner, NewMemory};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::sync::Arc;

/// Messages an extraction looks at (the most recent ones).
pub const EXTRACT_MESSAGES: u32 = 40;
/// Atoms accepted from one extraction at most.
const MAX_ATOMS: usize = 10;
const MESSAGE_CHARS: usize = 1_500;
/// How long a claim on extracting an idle session holds: well beyond the two
/// side calls an extraction may make (atoms, then layers), so a live claimant
/// keeps it; a claimant that died releases the session when it runs out.
pub const EXTRACTION_LEASE: chrono::Duration = chrono::Duration::minutes(10);

const PROMPT: &str = r#"You extract long-term memory atoms about the USER from a conversation between the user and an assistant.
Reply with ONLY a JSON object, no prose, exactly of this shape:
{"memories": [{"kind": "preference" | "decision", "content": "<one self-contained sentence>", "importance": <0.0-1.0>}]}
- preference: a stable taste, working style, constraint, habit or thing to avoid.
- decision: a non-obvious decision the user made, with its reason.
Write each content in the user's language, in the third person ("The user prefers ..."), at most 200 characters.
NEVER include: specific trades or purchases (what was bought or sold), transient facts or one-off states, today's market, prices or news, tool calls or their outputs, secrets (passwords, keys, tokens), facts about other people.
Only what will still be true and useful weeks from now. If nothing qualifies, reply {"memories": []}."#;

/// What one extraction did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtractReport {
    pub added: Vec<i64>,
    pub merged: Vec<i64>,
    /// Candidates refused, with the reason.
    pub rejected: Vec<(String, String)>,
    pub layers_refreshed: bool,
}

/// Runs extractions with the agent's provider.
#[derive(Clone)]
pub struct Extractor {
    book: MemoryBook,
    provider: Arc<dyn Provider>,
}

impl Extractor {
    pub fn new(book: MemoryBook, provider: Arc<dyn Provider>) -> Extractor {
        Extractor { book, provider }
    }

    pub fn book(&self) -> &MemoryBook {
        &self.book
    }

    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// Extracts the new messages of an idle session and moves its watermark —
    /// if this process wins the claim on them. `None`: another process has
    /// extracted them or is extracting them (its lease has not run out at `now`).
    pub async fn extract_session(
        &self,
        idle: &IdleSession,
        now: DateTime<Utc>,
    ) -> Result<Option<ExtractReport>, MemoryError> {
        let store = self.book.store();
        let lease_until = now + EXTRACTION_LEASE;
        if !store
            .sessions()
            .claim_extraction(idle, now, lease_until)
            .await?
        {
            return Ok(None);
        }
        let report = self.extract_claimed(idle, now).await;
        // A broken reply is not retried forever: the watermark moves either way.
        store
            .sessions()
            .finish_extraction(&idle.session, idle.last_message, lease_until)
            .await?;
        report.map(Some)
    }

    async fn extract_claimed(
        &self,
        idle: &IdleSession,
        now: DateTime<Utc>,
    ) -> Result<ExtractReport, MemoryError> {
        let rows = self
            .book
            .store()
            .history()
            .through(&idle.session, idle.last_message, EXTRACT_MESSAGES)
            .await?;
        let first = rows.first().map_or(0, |(id, _)| *id);
        let source = format!("chat:{}#{first}-{}", idle.session, idle.last_message);
        let messages: Vec<Message> = rows.into_iter().map(|(_, m)| m).collect();
        self.extract(MemoryOwner::of(&idle.key), &source, &messages, now)
            .await
    }

    /// Extracts L1 atoms from `messages` (the last [`EXTRACT_MESSAGES`] of them).
    pub async fn extract(
        &self,
        owner: MemoryOwner,
        source_ref: &str,
        messages: &[Message],
        now: DateTime<Utc>,
    ) -> Result<ExtractReport, MemoryError> {
        let mut report = ExtractReport::default();
        let start = messages.len().saturating_sub(EXTRACT_MESSAGES as usize);
        let Some(transcript) = transcript(&messages[start..]) else {
            return Ok(report);
        };
        let reply = complete(self.provider.as_ref(), PROMPT, transcript).await?;
        let (atoms, invalid) = parse_atoms(&reply)?;
        report.rejected = invalid;
        for atom in atoms {
            if let Err(why) = check_memory(&atom.content) {
                report
                    .rejected
                    .push((atom.content, why.as_str().to_owned()));
                continue;
            }
            let memory = NewMemory {
                kind: atom.kind,
                content: atom.content,
                source_ref: source_ref.to_owned(),
                importance: atom.importance,
                expires_at: None,
            };
            match self.book.save(owner, memory, now).await? {
                Saved::Added(id) => report.added.push(id),
                Saved::Merged(id) => report.merged.push(id),
            }
        }
        if !report.added.is_empty() {
            let added = u32::try_from(report.added.len()).unwrap_or(u32::MAX);
            let since = self
                .book
                .store()
                .memories()
                .add_l1_since_layer(owner, added)
                .await?;
            if since >= self.book.config().layer_every {
                report.layers_refreshed =
                    refresh_layers(&self.book, self.provider.as_ref(), owner, now).await?;
            }
        }
        tracing::info!(
            added = report.added.len(),
            merged = report.merged.len(),
            rejected = report.rejected.len(),
            layers = report.layers_refreshed,
            "memory extraction"
        );
        Ok(report)
    }
}

/// A candidate that passed the contract.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Atom {
    pub kind: MemoryKind,
    pub content: String,
    pub importance: f64,
}

/// Accepted atoms, and refused items with the reason.
pub(crate) type ParsedAtoms = (Vec<Atom>, Vec<(String, String)>);

/// Reads the reply under the contract: a `{"memories": [...]}` object and
/// nothing else. Bad items are refused one by one; a bad envelope refuses all.
pub(crate) fn parse_atoms(reply: &str) -> Result<ParsedAtoms, MemoryError> {
    let map = json_object(reply)?;
    if let Some(key) = map.keys().find(|k| k.as_str() != "memories") {
        return Err(MemoryError::Contract(format!("unexpected key {key:?}")));
    }
    let Some(Value::Array(items)) = map.get("memories") else {
        return Err(MemoryError::Contract("`memories` must be an array".into()));
    };
    let mut atoms = Vec::new();
    let mut rejected = Vec::new();
    for item in items {
        match atom(item) {
            Ok(a) if atoms.len() < MAX_ATOMS => atoms.push(a),
            Ok(a) => rejected.push((a.content, "too many atoms".into())),
            Err(why) => rejected.push((clip(&item.to_string(), 200), why)),
        }
    }
    Ok((atoms, rejected))
}

fn atom(item: &Value) -> Result<Atom, String> {
    let Value::Object(map) = item else {
        return Err("not an object".into());
    };
    if let Some(key) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "kind" | "content" | "importance"))
    {
        return Err(format!("unexpected key {key:?}"));
    }
    let kind = match map.get("kind").and_then(Value::as_str) {
        Some("preference") => MemoryKind::Preference,
        Some("decision") => MemoryKind::Decision,
        _ => return Err("kind must be preference or decision".into()),
    };
    let content = map
        .get("content")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default()
        .to_owned();
    if content.is_empty() {
        return Err("content must be a non-empty string".into());
    }
    let importance = match map.get("importance") {
        None => 0.5,
        Some(v) => match v.as_f64() {
            Some(x) if (0.0..=1.0).contains(&x) => x,
            _ => return Err("importance must be a number from 0 to 1".into()),
        },
    };
    Ok(Atom {
        kind,
        content,
        importance,
    })
}

/// The conversation as the extractor sees it: user and assistant text only
/// (tool calls and results are never memory material). `None` without user text.
pub(crate) fn transcript(messages: &[Message]) -> Option<String> {
    let mut out = String::new();
    let mut any_user = false;
    for m in messages {
        let text = m.content.trim();
        let who = match m.role {
            Role::User if text.starts_with("[SYSTEM NOTIFICATION") => continue,
            Role::User => {
                any_user = true;
                "user"
            }
            Role::Assistant if !text.is_empty() => "assistant",
            _ => continue,
        };
        out.push_str(&format!(
            "[{who}] {}\n",
            clip(current_message(text), MESSAGE_CHARS)
        ));
    }
    any_user.then_some(out)
}

/// The user's own text of a message that may carry recalled memories.
fn current_message(text: &str) -> &str {
    match (
        text.find("<current-user-message>"),
        text.rfind("</current-user-message>"),
    ) {
        (Some(a), Some(b)) if a < b => text[a + "<current-user-message>".len()..b].trim(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_claimant_keeps_its_lease() {
        let side_calls = 2 * super::super::model::SIDE_CALL_TIMEOUT.as_secs();
        assert!(EXTRACTION_LEASE.num_seconds() > i64::try_from(side_calls).unwrap());
    }

    #[test]
    fn the_contract_accepts_good_atoms_and_refuses_bad_ones() {
        let reply = r#"{"memories": [
            {"kind": "preference", "content": "The user prefers dark mode", "importance": 0.7},
            {"kind": "fact", "content": "x"},
            {"kind": "decision", "content": ""},
            {"kind": "decision", "content": "Chose Rust for speed", "importance": 3},
            {"kind": "decision", "content": "Chose Rust for safety", "why": "?"},
            "text"
        ]}"#;
        let (atoms, rejected) = parse_atoms(reply).unwrap();
        assert_eq!(
            atoms,
            [Atom {
                kind: MemoryKind::Preference,
                content: "The user prefers dark mode".into(),
                importance: 0.7
            }]
        );
        assert_eq!(rejected.len(), 5);
        assert!(parse_atoms(r#"{"memories": [], "note": "hi"}"#).is_err());
        assert!(parse_atoms(r#"{"memories": {}}"#).is_err());
        assert!(parse_atoms("Here you go: []").is_err());
    }

    #[test]
    fn the_transcript_keeps_user_and_assistant_text_only() {
        let mut call = Message::assistant("");
        call.tool_calls.push(crate::llm::ToolCall {
            id: "c".into(),
            name: "exec_command".into(),
            arguments: "{}".into(),
        });
        let msgs = [
            Message::user("<relevant-memories>\n- old\n</relevant-memories>\n<current-user-message>\nI like tea\n</current-user-message>"),
            call,
            Message::tool_result("c", "secret output"),
            Message::assistant("Noted."),
            Message::user("[SYSTEM NOTIFICATION - NOT USER INPUT] task done"),
        ];
        assert_eq!(
            transcript(&msgs).unwrap(),
            "[user] I like tea\n[assistant] Noted.\n"
        );
        assert!(transcript(&[Message::assistant("hello")]).is_none());
    }
}
