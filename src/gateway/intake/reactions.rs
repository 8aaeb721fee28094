//! A reaction a user put on a message: 👍 or 👎 on one of the bot's rateable
//! answers, by the user the answer was for, counts exactly like the answer's
//! feedback buttons. Every other reaction is ignored.

use crate::gateway::Inner;
use crate::store::MemoryOwner;
use chrono::Utc;
use std::sync::Arc;
use switchboard_platform::Reaction;

/// +1 for 👍, -1 for 👎 (any skin tone), else `None`.
pub(crate) fn rating_of(emoji: &str) -> Option<i8> {
    let base: String = emoji
        .chars()
        .filter(|c| *c != '\u{fe0f}' && !('\u{1f3fb}'..='\u{1f3ff}').contains(c))
        .collect();
    match base.as_str() {
        "👍" => Some(1),
        "👎" => Some(-1),
        _ => None,
    }
}

/// Handles one reaction (on its own task, spawned by the router).
pub(in crate::gateway) async fn handle(inner: &Arc<Inner>, reaction: &Reaction) {
    if reaction.user.is_bot {
        return;
    }
    let Some(rating) = reaction.emoji.iter().rev().find_map(|e| rating_of(e)) else {
        return;
    };
    let platform = reaction.chat.platform;
    let memories = inner.store.memories();
    let (chat, message) = (reaction.message.chat.chat.0, reaction.message.id.0);
    let id = match memories.feedback_at(platform, chat, message).await {
        Ok(Some(id)) => id,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "could not look up a reacted answer");
            return;
        }
    };
    let owner = MemoryOwner::new(platform, reaction.user.id);
    match memories.rate_feedback(&id, owner, rating, Utc::now()).await {
        Ok(Some(rated)) => {
            tracing::info!(answer = %id, rating, "feedback by reaction");
            if rated.changes_rules() {
                crate::gateway::turn::memory::redistill(inner, owner);
            }
        }
        // Someone else's answer: only the person who asked rates it.
        Ok(None) => tracing::debug!(answer = %id, "reaction on another user's answer ignored"),
        Err(e) => tracing::warn!(error = %e, "could not record feedback by reaction"),
    }
}

#[cfg(test)]
mod tests {
    use super::rating_of;

    #[test]
    fn thumbs_of_any_tone_rate_and_other_emoji_do_not() {
        assert_eq!(rating_of("👍"), Some(1));
        assert_eq!(rating_of("👍🏽"), Some(1));
        assert_eq!(rating_of("👎"), Some(-1));
        assert_eq!(rating_of("❤"), None);
        assert_eq!(rating_of("👍👍"), None);
    }
}
