//! `/approve <id> allow|always|edit|deny [reason]`: deciding an approval by
//! its short id, from any chat, under the buttons' authorization.

use super::{card, rules, status_word, Approvals, Choice};
use crate::store::{ApprovalRecord, ApprovalStatus};
use switchboard_platform::{MessageRef, OutgoingMessage, Platform, User};

/// The outcome of a typed `/approve`.
#[derive(Debug)]
pub struct TextDecision {
    /// The answer for the chat it was typed in.
    pub reply: String,
    /// The decided approval whose paused turn the caller resumes (none for an
    /// edit: the requester's next message resumes it).
    pub resume: Option<ApprovalRecord>,
    /// The card to edit to its final state.
    pub card: Option<(MessageRef, OutgoingMessage)>,
}

impl Approvals {
    /// Decides by the text fallback `/approve <id> allow|always|edit|deny [reason]`
    /// typed on `platform`. The caller posts the reply and applies the card
    /// update (both may wait on the platform's flood control, which must not
    /// hold up the inbound path).
    pub async fn handle_text(
        &self,
        platform: Platform,
        user: &User,
        id_prefix: &str,
        choice: Choice,
        reason: Option<String>,
    ) -> TextDecision {
        let refused = |reply: String| TextDecision {
            reply,
            resume: None,
            card: None,
        };
        let id = match self.store.approvals().by_prefix(id_prefix).await {
            Ok(Some(id)) => id,
            Ok(None) => return refused(format!("No approval matches `{id_prefix}`.")),
            Err(e) => {
                tracing::error!(error = %e, "approval lookup failed");
                return refused("Could not look up that approval; please try again.".into());
            }
        };
        let prefix = reason.clone().filter(|_| choice == Choice::Always);
        match self.decide(&id, platform, user, choice, reason).await {
            Ok(Ok(record)) => {
                let scope = prefix
                    .map(|p| {
                        let rule = rules::prefix_pattern(&record.tool_name, &record.arguments, &p);
                        let described = rule.map_or_else(
                            |_| rules::describe_prefix(&p),
                            |pattern| rules::describe(&pattern),
                        );
                        format!(" ({described})")
                    })
                    .unwrap_or_default();
                TextDecision {
                    reply: format!(
                        "Recorded: {}{scope} for `{}`.",
                        status_word(record.status),
                        record.id.short()
                    ),
                    card: record.card_message.map(|msg| {
                        let at = MessageRef {
                            chat: record.chat,
                            id: msg,
                        };
                        (at, card::final_card(&record))
                    }),
                    resume: (record.status != ApprovalStatus::Edited).then(|| record.clone()),
                }
            }
            Ok(Err(refusal)) => refused(refusal),
            Err(e) => {
                tracing::error!(error = %e, "approval decision failed");
                refused("Something went wrong recording your decision; please try again.".into())
            }
        }
    }
}
