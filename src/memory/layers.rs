//! L2 (scenarios) and L3 (persona) refreshed from the L1 atoms by the model.

use super::book::MemoryBook;
use super::filter::check_memory;
use super::model::{complete, json_object};
use super::MemoryError;
use crate::llm::Provider;
use crate::store::{MemoryKind, MemoryOwner, NewMemory};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// L1 atoms given to a refresh at most.
const L1_INPUT: u32 = 80;
/// Fewer L1 atoms than this are not worth a refresh.
const L1_MINIMUM: usize = 3;
const MAX_SCENARIOS: usize = 5;
const MAX_PERSONA: usize = 5;

const PROMPT: &str = r#"You maintain a layered memory of ONE user from their stored preferences and decisions.
Reply with ONLY a JSON object, no prose, exactly of this shape:
{"scenarios": [{"content": "<situation and how the user handles it>", "importance": <0.0-1.0>}], "persona": [{"content": "<a trait of who the user is>"}]}
- scenarios (at most 5): reusable situations generalized from several atoms ("When reviewing code, the user wants ...").
- persona (at most 5): a compact profile: role, expertise, goals, communication style. It replaces the previous persona.
Write in the user's language, at most 200 characters each. Never include trades, prices, transient facts, tool details or secrets."#;

/// Refreshes the owner's scenarios and persona from their L1 atoms; false when
/// there was too little to go on.
pub(crate) async fn refresh_layers(
    book: &MemoryBook,
    provider: &dyn Provider,
    owner: MemoryOwner,
    now: DateTime<Utc>,
) -> Result<bool, MemoryError> {
    let store = book.store();
    let l1 = store
        .memories()
        .of(
            owner,
            &[MemoryKind::Preference, MemoryKind::Decision],
            L1_INPUT,
            now,
        )
        .await?;
    if l1.len() < L1_MINIMUM {
        return Ok(false);
    }
    let layered = store
        .memories()
        .of(owner, &[MemoryKind::Persona, MemoryKind::Scenario], 30, now)
        .await?;
    let mut input = String::from("Preferences and decisions:\n");
    for m in &l1 {
        input.push_str(&format!(
            "- [{} #{}] {}\n",
            m.kind.as_str(),
            m.id,
            m.content
        ));
    }
    if !layered.is_empty() {
        input.push_str("\nCurrent scenarios and persona:\n");
        for m in &layered {
            input.push_str(&format!("- [{}] {}\n", m.kind.as_str(), m.content));
        }
    }
    let reply = complete(provider, PROMPT, input).await?;
    let (scenarios, persona) = parse_layers(&reply)?;
    let ids: Vec<String> = l1.iter().take(8).map(|m| format!("#{}", m.id)).collect();
    let source = format!("layers:{}", ids.join(","));
    if !persona.is_empty() {
        store
            .memories()
            .delete_of_kind(owner, MemoryKind::Persona)
            .await?;
        for (content, importance) in persona {
            let m = NewMemory {
                kind: MemoryKind::Persona,
                content,
                source_ref: source.clone(),
                importance,
                expires_at: None,
            };
            book.save(owner, m, now).await?;
        }
    }
    for (content, importance) in scenarios {
        let m = NewMemory {
            kind: MemoryKind::Scenario,
            content,
            source_ref: source.clone(),
            importance,
            expires_at: None,
        };
        book.save(owner, m, now).await?;
    }
    store.memories().reset_l1_since_layer(owner).await?;
    Ok(true)
}

type Items = Vec<(String, f64)>;

/// Reads a refresh reply: exactly `scenarios` and `persona` arrays; items that
/// break the contract or the content rules are dropped.
pub(crate) fn parse_layers(reply: &str) -> Result<(Items, Items), MemoryError> {
    let map = json_object(reply)?;
    if let Some(key) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "scenarios" | "persona"))
    {
        return Err(MemoryError::Contract(format!("unexpected key {key:?}")));
    }
    let read = |key: &str, max: usize| -> Result<Items, MemoryError> {
        let items = match map.get(key) {
            None => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(MemoryError::Contract(format!("`{key}` must be an array"))),
        };
        Ok(items
            .iter()
            .filter_map(|item| {
                let obj = item.as_object()?;
                if obj
                    .keys()
                    .any(|k| !matches!(k.as_str(), "content" | "importance"))
                {
                    return None;
                }
                let content = obj.get("content")?.as_str()?.trim().to_owned();
                let importance = obj
                    .get("importance")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.6)
                    .clamp(0.0, 1.0);
                check_memory(&content)
                    .is_ok()
                    .then_some((content, importance))
            })
            .take(max)
            .collect())
    };
    Ok((
        read("scenarios", MAX_SCENARIOS)?,
        read("persona", MAX_PERSONA)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_reply_is_read_strictly() {
        let reply = r#"{"scenarios": [{"content": "When reviewing code, the user wants tests first", "importance": 0.8},
                                      {"content": "The user bought 100 shares of 600519"}],
                        "persona": [{"content": "A backend engineer who likes Rust", "mood": "x"}, {"content": "Prefers brevity"}]}"#;
        let (scenarios, persona) = parse_layers(reply).unwrap();
        assert_eq!(
            scenarios,
            [(
                "When reviewing code, the user wants tests first".to_owned(),
                0.8
            )]
        );
        assert_eq!(persona, [("Prefers brevity".to_owned(), 0.6)]);
        assert!(parse_layers(r#"{"persona": [], "other": 1}"#).is_err());
        assert!(parse_layers(r#"{"persona": "x"}"#).is_err());
    }
}
