//! The profile-update card: a reflection note's proposed change to the
//! user's profile (`store.suggestions()`), shown verbatim in their direct
//! messages under the next answer there, with ✅ Apply / ✖ Dismiss. Only
//! that user, in that chat, decides, once: Apply writes the text as a
//! lasting preference in their memory; Dismiss keeps the refusal, so the
//! same text is never proposed again. The suggestion lives in the database,
//! so the card keeps working across restarts.

use crate::gateway::delivery::activity::escape;
use crate::gateway::delivery::origin::Origin;
use crate::gateway::Inner;
use crate::store::{MemoryKind, MemoryOwner, NewMemory, ProfileSuggestion, SuggestionStatus};
use chrono::Utc;
use switchboard_platform::{
    ActionId, Button, ButtonPress, ButtonStyle, OutgoingMessage, PlatformAdapter, PressAnswer,
};

const PREFIX: &str = "pf:";

const NOT_YOURS: &str = "Only the person this suggestion is for can answer it.";
const NOT_HERE: &str = "This suggestion can only be answered in the chat it was shown in.";
const GONE: &str = "This button is no longer valid.";
const UNAVAILABLE: &str = "⚠️ I couldn't record that right now.";
const APPLIED: &str = "✅ Saved to your profile.";
const DISMISSED: &str = "Dismissed — I won't suggest this again.";

/// What a press asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    Apply,
    Dismiss,
}

/// `pf:<id>:a` / `pf:<id>:d` → (suggestion id, choice).
pub(crate) fn parse_action(action: &ActionId) -> Option<(String, Choice)> {
    let rest = action.as_str().strip_prefix(PREFIX)?;
    let (id, choice) = rest.rsplit_once(':')?;
    if id.is_empty() || id.len() > 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let choice = match choice {
        "a" => Choice::Apply,
        "d" => Choice::Dismiss,
        _ => return None,
    };
    Some((id.to_owned(), choice))
}

fn button(label: &str, id: &str, code: char, style: ButtonStyle) -> Option<Button> {
    ActionId::parse(&format!("{PREFIX}{id}:{code}")).map(|action| Button {
        label: label.into(),
        action,
        style,
        shortcut: None,
    })
}

/// The card's text: the proposed change verbatim (Markdown taken literally).
pub(crate) fn card_text(content: &str) -> String {
    format!(
        "📝 *Profile update suggested*\nFrom my notes on our recent conversations, I'd keep this in your profile:\n\n{}\n\nApply saves it as a lasting preference I use when answering you; Dismiss drops it and I won't suggest it again.",
        escape(content)
    )
}

/// After a turn in a direct message: the user's oldest pending suggestion
/// whose card is not out yet, posted there (claimed first: one card, once).
pub(in crate::gateway) async fn offer(inner: &Inner, o: &Origin) {
    let caps = o.adapter.capabilities();
    if !o.conversation.kind.is_private() || !caps.buttons || !caps.answer_buttons {
        return;
    }
    let owner = MemoryOwner::new(o.conversation.key.platform, o.conversation.key.user);
    let suggestions = inner.store.suggestions();
    let pending = match suggestions.unposted(owner, 1).await {
        Ok(pending) => pending,
        Err(e) => return tracing::warn!(error = %e, "could not look for profile suggestions"),
    };
    let chat = &o.conversation.chat;
    for s in pending {
        match suggestions.claim_post(&s.id, chat.chat, Utc::now()).await {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "could not claim a profile suggestion");
                continue;
            }
        }
        let row: Vec<Button> = [
            button("✅ Apply", &s.id, 'a', ButtonStyle::Success),
            button("✖ Dismiss", &s.id, 'd', ButtonStyle::Secondary),
        ]
        .into_iter()
        .flatten()
        .collect();
        let card = OutgoingMessage::text(card_text(&s.content)).with_buttons(vec![row]);
        if let Err(e) = o.adapter.send(chat, card).await {
            tracing::warn!(error = %e, "could not post a profile suggestion");
            if let Err(e) = suggestions.release_post(&s.id).await {
                tracing::warn!(error = %e, "could not give a profile suggestion back");
            }
        }
    }
}

/// An Apply / Dismiss press: decided once by its user in its chat; the card
/// then shows the outcome without buttons.
pub(crate) async fn on_press(inner: &Inner, adapter: &dyn PlatformAdapter, press: &ButtonPress) {
    let Some((id, choice)) = parse_action(&press.action) else {
        return;
    };
    let text = match decide(inner, press, &id, choice).await {
        Ok(decided) => {
            if let Some(message) = &press.message {
                let outcome = match choice {
                    Choice::Apply => "applied ✅",
                    Choice::Dismiss => "dismissed",
                };
                let shown = format!(
                    "📝 *Profile update — {outcome}*\n\n{}",
                    escape(&decided.content)
                );
                if let Err(e) = adapter.edit(message, OutgoingMessage::text(shown)).await {
                    tracing::warn!(error = %e, "could not update a profile suggestion card");
                }
            }
            match choice {
                Choice::Apply => APPLIED.to_owned(),
                Choice::Dismiss => DISMISSED.to_owned(),
            }
        }
        Err(why) => why,
    };
    if let Err(e) = adapter
        .answer_press(press, PressAnswer::Private(text))
        .await
    {
        tracing::warn!(error = %e, "could not answer a press");
    }
}

/// Checks and records the decision; the refusal's words otherwise.
async fn decide(
    inner: &Inner,
    press: &ButtonPress,
    id: &str,
    choice: Choice,
) -> Result<ProfileSuggestion, String> {
    let suggestions = inner.store.suggestions();
    let unavailable = |e: crate::store::StoreError| {
        tracing::warn!(error = %e, "could not read a profile suggestion");
        UNAVAILABLE.to_owned()
    };
    let s = suggestions
        .get(id)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| GONE.to_owned())?;
    if s.owner != MemoryOwner::new(press.chat.platform, press.user.id) {
        return Err(NOT_YOURS.into());
    }
    match s.chat {
        Some(chat) if chat == press.chat.chat => {}
        Some(_) => return Err(NOT_HERE.into()),
        None => return Err(GONE.into()),
    }
    let status = match choice {
        Choice::Apply => SuggestionStatus::Applied,
        Choice::Dismiss => SuggestionStatus::Dismissed,
    };
    if !suggestions
        .decide(id, status, Utc::now())
        .await
        .map_err(unavailable)?
    {
        let now = suggestions.get(id).await.map_err(unavailable)?;
        return Err(match now.map(|s| s.status) {
            Some(SuggestionStatus::Applied) => "This suggestion was already applied.".into(),
            Some(SuggestionStatus::Dismissed) => "This suggestion was already dismissed.".into(),
            _ => GONE.into(),
        });
    }
    if choice == Choice::Apply {
        apply(inner, &s).await?;
    }
    Ok(s)
}

/// Writes the suggestion as a lasting preference; on failure the
/// suggestion goes back to pending (its card still works).
async fn apply(inner: &Inner, s: &ProfileSuggestion) -> Result<(), String> {
    let memory = NewMemory {
        kind: MemoryKind::Preference,
        content: s.content.clone(),
        source_ref: format!("suggestion:{}", s.id),
        importance: 0.8,
        expires_at: None,
    };
    let book = inner.features.extractor.book();
    let saved = book.save(s.owner, memory, Utc::now()).await;
    let memory = saved.as_ref().ok().map(|m| m.id());
    if let Err(e) = inner.store.suggestions().applied(&s.id, memory).await {
        tracing::warn!(error = %e, "could not record an applied profile suggestion");
    }
    saved.map(|_| ()).map_err(|e| {
        tracing::warn!(error = %e, "could not apply a profile suggestion");
        UNAVAILABLE.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_round_trip_and_refuse_junk() {
        let apply = button("x", "abc123", 'a', ButtonStyle::Success).unwrap();
        assert_eq!(
            parse_action(&apply.action),
            Some(("abc123".to_owned(), Choice::Apply))
        );
        let dismiss = button("x", "abc123", 'd', ButtonStyle::Secondary).unwrap();
        assert_eq!(
            parse_action(&dismiss.action).map(|a| a.1),
            Some(Choice::Dismiss)
        );
        for junk in ["pf:zz:a", "pf::a", "pf:abc:x", "rs:abc:0", "pf:abc"] {
            let action = ActionId::parse(junk).unwrap();
            assert_eq!(parse_action(&action), None, "{junk}");
        }
    }

    #[test]
    fn the_card_shows_the_change_verbatim() {
        let text = card_text("Prefers *short* answers");
        assert!(text.contains("Prefers \\*short\\* answers"), "{text}");
    }
}
