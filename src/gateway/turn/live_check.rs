//! The planner's explicit check before a turn (seeds/003, "dynamic state
//! refresh"): one short side call asks the model which kinds of live state
//! — the portfolio ledger, schedules, background tasks, "always allow"
//! rules — the user's request reads or changes, as a strict JSON object.
//! A reply that breaks the contract, an error or a hang falls back to every
//! kind. The call is not made for plain chat (a greeting, a thanks, a bare
//! yes, emoji) nor when nothing could be stale (no task summary, no open
//! plan, no live state at all), nor with `LIVE_STATE_CHECK=off`; its tokens
//! count in the user's usage like the turn's own.

use crate::domain::SessionKey;
use crate::gateway::turn::live_state::Touches;
use crate::gateway::Inner;
use serde::Deserialize;
use std::time::Duration;

/// How long the check may take before the turn goes on without it.
pub(in crate::gateway) const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

const PROMPT: &str = r#"You classify ONE user request for an assistant's planner: which kinds of live state answering it reads or changes.
Kinds: "portfolio" (the user's holdings ledger), "schedules" (reminders, recurring reports and jobs), "tasks" (background jobs running or done), "rules" (the user's "always allow" approval rules).
Reply with ONLY a JSON object, no prose, exactly of this shape: {"reads": ["<kind>"], "changes": ["<kind>"]} — empty lists when the request touches none of them."#;

/// The check's reply contract.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    reads: Vec<String>,
    changes: Vec<String>,
}

/// What the check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::gateway) enum Checked {
    /// The model named these kinds (possibly none).
    Classified(Touches),
    /// The check could not say (bad reply, error, hang): read every kind.
    Fallback,
}

impl Checked {
    pub fn touches(self) -> Touches {
        match self {
            Checked::Classified(t) => t,
            Checked::Fallback => Touches::all(),
        }
    }
}

/// Reads a reply under the contract: one JSON object (bare or in one
/// ```json fence) with exactly `reads` and `changes`, lists of known kinds.
pub(in crate::gateway) fn parse(reply: &str) -> Result<Touches, String> {
    let text = reply.trim();
    let body = match text.strip_prefix("```") {
        Some(rest) => rest
            .strip_prefix("json")
            .unwrap_or(rest)
            .strip_suffix("```")
            .ok_or("unterminated code fence")?
            .trim(),
        None => text,
    };
    let reply: Reply = serde_json::from_str(body).map_err(|e| e.to_string())?;
    if reply.reads.len() + reply.changes.len() > 8 {
        return Err("too many kinds".into());
    }
    reply
        .reads
        .iter()
        .chain(&reply.changes)
        .try_fold(Touches::default(), |acc, kind| {
            Touches::of_kind(kind)
                .map(|t| acc.or(t))
                .ok_or_else(|| format!("unknown kind {kind:?}"))
        })
}

/// Plain chat needs no check: nothing but emoji or punctuation, a bare
/// yes (the consent reading's), or a greeting or thanks alone.
pub(in crate::gateway) fn is_plain_chat(text: &str) -> bool {
    const GREETINGS: &[&str] = &[
        "hi",
        "hello",
        "hey",
        "thanks",
        "thank you",
        "thx",
        "bye",
        "good morning",
        "good night",
        "good evening",
        "你好",
        "谢谢",
        "早上好",
        "晚安",
        "再见",
    ];
    let t = text.trim();
    if !t.chars().any(char::is_alphanumeric) {
        return true;
    }
    let bare: String = t
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect();
    let bare = bare.split_whitespace().collect::<Vec<_>>().join(" ");
    GREETINGS.contains(&bare.as_str())
        || (bare.split_whitespace().count() <= 2
            && crate::gateway::turn::consent::is_affirmative(t))
}

/// Asks the model which kinds `text` touches (one call, [`CHECK_TIMEOUT`]),
/// counting its tokens in the user's usage.
pub(in crate::gateway) async fn classify(inner: &Inner, key: &SessionKey, text: &str) -> Checked {
    let provider = std::sync::Arc::clone(inner.features.extractor.provider());
    let input = format!("Request: {}", crate::text::clip(text, 2_000));
    let call = crate::llm::complete_counted(provider.as_ref(), PROMPT, input, CHECK_TIMEOUT);
    let (reply, usage) = match call.await {
        Ok(done) => done,
        Err(e) => {
            tracing::warn!(error = %e, "live state check failed: every kind is read");
            return Checked::Fallback;
        }
    };
    if usage != crate::llm::Usage::default() {
        let model = provider
            .route()
            .unwrap_or_else(|| provider.model().name.clone());
        crate::models::record_usage(&inner.store, key.platform, key.user, &model, &usage, 0).await;
    }
    match parse(&reply) {
        Ok(touches) => Checked::Classified(touches),
        Err(why) => {
            tracing::warn!(%why, "live state check broke its contract: every kind is read");
            Checked::Fallback
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_is_read_strictly() {
        let t = parse(r#"{"reads": ["schedules"], "changes": ["rules"]}"#).unwrap();
        assert!(t.schedules && t.rules && !t.portfolio && !t.tasks);
        let t = parse("```json\n{\"reads\": [], \"changes\": []}\n```").unwrap();
        assert!(!t.any());
        for bad in [
            "schedules",
            r#"{"reads": ["weather"], "changes": []}"#,
            r#"{"reads": []}"#,
            r#"{"reads": [], "changes": [], "why": "x"}"#,
            r#"{"reads": "schedules", "changes": []}"#,
            "[]",
            "```json\n{\"reads\": [], \"changes\": []}",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_plain_chat_skips_the_check() {
        for chat in ["hi", "Thanks!", "👍", "ok", "yes please", "谢谢", "..."] {
            assert!(is_plain_chat(chat), "{chat}");
        }
        for request in [
            "cancel the daily report",
            "ok, now cancel my reminder",
            "remind me",
            "sell 5 AAPL",
            "加仓 茅台",
        ] {
            assert!(!is_plain_chat(request), "{request}");
        }
    }
}
