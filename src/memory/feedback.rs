//! 👍/👎 under answers: the buttons, their action ids, and the distillation of
//! a user's recent 👎 into at most five correction rules.

use super::filter::check_secret;
use super::model::{clip, complete, json_object};
use super::MemoryError;
use crate::domain::FeedbackId;
use crate::llm::Provider;
use crate::store::{MemoryOwner, Store};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use switchboard_platform::{ActionId, Button, ButtonStyle};

const PREFIX: &str = "fb:";
/// Negative feedback older than this no longer shapes rules.
pub const FEEDBACK_WINDOW_DAYS: i64 = 7;
/// Correction rules injected at most.
pub const MAX_RULES: usize = 5;
const RULE_CHARS: usize = 200;

const PROMPT: &str = r#"A user marked the assistant's answers below as unhelpful.
Distill at most 5 short, general rules the assistant should follow from now on with this user (style, format, accuracy, language, scope). Do not restate the questions; write rules.
Reply with ONLY a JSON object, no prose: {"rules": ["<rule>", ...]}"#;

/// A fresh id for a rateable answer (12 hex characters).
pub fn new_feedback_id() -> FeedbackId {
    FeedbackId::new_short()
}

/// The 👍/👎 row for answer `id`.
pub fn feedback_buttons(id: &FeedbackId) -> Vec<Vec<Button>> {
    let button = |label: &str, code: char, style| {
        ActionId::parse(&format!("{PREFIX}{id}:{code}")).map(|action| Button {
            label: label.into(),
            action,
            style,
            shortcut: None,
        })
    };
    let row: Vec<Button> = [
        button("👍", 'u', ButtonStyle::Secondary),
        button("👎", 'd', ButtonStyle::Secondary),
    ]
    .into_iter()
    .flatten()
    .collect();
    if row.is_empty() {
        Vec::new()
    } else {
        vec![row]
    }
}

/// `fb:<id>:u|d` → (answer id, +1 or -1).
pub fn parse_feedback(action: &ActionId) -> Option<(FeedbackId, i8)> {
    let rest = action.as_str().strip_prefix(PREFIX)?;
    let (id, code) = rest.rsplit_once(':')?;
    let rating = match code {
        "u" => 1,
        "d" => -1,
        _ => return None,
    };
    if id.is_empty() || id.len() > 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some((id.parse().ok()?, rating))
}

/// Re-distills the owner's correction rules from their 👎 of the last seven
/// days (none left: no rules). Returns the rules now in force.
///
/// The rules are distilled from all those 👎 together, so they stop being
/// injected once the newest of them is seven days old — never later, however
/// recently the distillation ran.
pub async fn distill_rules(
    store: &Store,
    provider: &dyn Provider,
    owner: MemoryOwner,
    now: DateTime<Utc>,
) -> Result<Vec<String>, MemoryError> {
    let window = Duration::days(FEEDBACK_WINDOW_DAYS);
    let negatives = store
        .memories()
        .negative_feedback(owner, now - window, 10)
        .await?;
    let newest = negatives.iter().filter_map(|f| f.rated_at).max();
    let Some(newest) = newest else {
        store
            .memories()
            .replace_correction_rules(owner, &[], now, now)
            .await?;
        return Ok(Vec::new());
    };
    let expires = newest + window;
    let mut input = String::new();
    for (i, f) in negatives.iter().enumerate() {
        input.push_str(&format!(
            "{}. Question: {}\n   Answer: {}\n",
            i + 1,
            clip(&f.question, 400),
            clip(&f.answer, 800)
        ));
    }
    let reply = complete(provider, PROMPT, input).await?;
    let rules = parse_rules(&reply)?;
    store
        .memories()
        .replace_correction_rules(owner, &rules, now, expires)
        .await?;
    Ok(rules)
}

/// Reads `{"rules": [string]}`: at most five short rules without secrets.
pub(crate) fn parse_rules(reply: &str) -> Result<Vec<String>, MemoryError> {
    let map = json_object(reply)?;
    if map.len() != 1 {
        return Err(MemoryError::Contract(
            "expected exactly the key `rules`".into(),
        ));
    }
    let Some(Value::Array(items)) = map.get("rules") else {
        return Err(MemoryError::Contract("`rules` must be an array".into()));
    };
    Ok(items
        .iter()
        .filter_map(Value::as_str)
        .map(|r| clip(r.trim(), RULE_CHARS))
        .filter(|r| !r.is_empty() && check_secret(r).is_ok())
        .take(MAX_RULES)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buttons_round_trip_through_action_ids() {
        let id = new_feedback_id();
        let rows = feedback_buttons(&id);
        assert_eq!(rows.len(), 1);
        let parsed: Vec<_> = rows[0]
            .iter()
            .filter_map(|b| parse_feedback(&b.action))
            .collect();
        assert_eq!(parsed, [(id.clone(), 1), (id, -1)]);
        assert!(parse_feedback(&ActionId::parse("ap:abc:y").unwrap()).is_none());
        assert!(parse_feedback(&ActionId::parse("fb:zz:u").unwrap()).is_none());
        assert!(parse_feedback(&ActionId::parse("fb:abc:x").unwrap()).is_none());
    }

    #[test]
    fn rules_are_capped_and_clean() {
        let reply = r#"{"rules": ["Answer in Chinese.", "Be brief.", "", "Use tables", "Cite sources", "No emojis", "Sixth rule"]}"#;
        assert_eq!(parse_rules(reply).unwrap().len(), MAX_RULES);
        assert_eq!(
            parse_rules(r#"{"rules": ["token: abc", "Be brief."]}"#).unwrap(),
            ["Be brief."]
        );
        assert!(parse_rules(r#"{"rules": [], "x": 1}"#).is_err());
    }
}
