//! Approvals: asking before a risky tool runs, recording the decision (first one
//! wins), "always allow" rules, expiry, and answering the buttons.

mod approve_command;
mod card;
mod card_layout;
mod edit;
mod edit_form;
mod edit_schema;
mod expiry;
mod press;
pub(crate) mod rules;
#[cfg(test)]
mod rules_props;

pub use crate::domain::short_id;
pub use approve_command::TextDecision;
pub(crate) use card::pending_card;
pub use card::{action_id, parse_action, Choice};
pub use card_layout::CARD_SHOWN_CHARS;
pub(crate) use edit::{check as check_edit, edited_arguments, prompt as edit_prompt};
pub use press::Decided;
pub use rules::describe as describe_rule;

use crate::clock::Clock;
use crate::domain::{ApprovalId, SessionId};
use crate::store::{ApprovalRecord, ApprovalStatus, Store, StoreError};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use switchboard_platform::{
    ChatAddress, MessageRef, OutgoingFile, Platform, PlatformAdapter, User,
};

/// The tool name of an approval an MCP client asked for (`switchboard mcp`'s
/// `request_approval`): no turn waits on it, only approvers decide it, and it
/// is allowed once or denied (no rules, no edits).
pub const EXTERNAL_APPROVAL: &str = "mcp.request_approval";

/// The session id of an approval asked for over MCP (`switchboard mcp`: an
/// external agent's `request_approval`, or a call of one of the agent's own
/// tools): no turn waits on it — its client reads the decision.
pub const MCP_ORIGIN: &str = "mcp";

/// Whether `record` was asked for over MCP: its card has no Edit (nobody
/// types new arguments into another agent's call) and no turn resumes.
pub fn from_mcp(record: &ApprovalRecord) -> bool {
    record.session_id.as_str() == MCP_ORIGIN || record.tool_name == EXTERNAL_APPROVAL
}

/// Cards that can only be allowed once or denied — no "always" rule, no
/// edit: an external agent's request, and every change to the tools.
pub fn once_only(tool: &str) -> bool {
    tool == EXTERNAL_APPROVAL
        || tool == crate::tools::HTTP_TOOL
        || tool == crate::tools::SCRIPT_TOOL
        || tool == crate::tools::INSTALL_SKILL
}

/// What the requester (or an approver) decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Always,
    /// The requester's next message replaces the arguments.
    Edit,
    /// Sent back with these new arguments (JSON), as sent in the card's
    /// form: a new card asks about them.
    EditedTo(String),
    Deny(Option<String>),
    Expired,
}

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("could not show the approval card: {0}")]
    Card(String),
}

/// Everything needed to ask for one approval.
pub struct ApprovalRequest<'a> {
    /// The approval's id, a simple (hex) UUID chosen by the caller (the paused
    /// turn's row is stored under it).
    pub id: ApprovalId,
    pub session_id: &'a SessionId,
    pub requester: &'a User,
    pub chat: ChatAddress,
    pub tool_name: &'a str,
    pub tool_display: &'a str,
    pub arguments: &'a Value,
    pub summary: String,
}

/// How often, and how far apart, a press naming a message looks again for the
/// card's own message id while the card is being shown (the gap is one
/// database write; 2 s in all — past that, its storing failed and the chat
/// decides).
const BOOKKEEPING_CHECKS: usize = 1_000;
const BOOKKEEPING_WAIT: Duration = Duration::from_millis(2);

/// Sends the full summary as a file when the card shows only its start. Best
/// effort: the card (and its decision) stands without it.
async fn attach_full_text(adapter: &dyn PlatformAdapter, record: &ApprovalRecord) {
    let Some(name) = card_layout::Shown::of(&record.tool_name, &record.summary).file_name() else {
        return;
    };
    let file = OutgoingFile::document(record.chat, name, record.summary.clone().into_bytes())
        .with_caption(format!(
            "Full text of approval {} ({} characters)",
            record.id.short(),
            crate::text::grouped(record.summary.chars().count())
        ));
    if let Err(e) = adapter.send_file(file).await {
        tracing::warn!(error = %e, "could not attach the full text of an approval card");
    }
}

/// The approvals service: every decision lives in the database, taken by one
/// conditional update (the first wins), and any process resumes the turn.
pub struct Approvals {
    store: Store,
    timeout: Duration,
    clock: Arc<dyn Clock>,
}

impl Approvals {
    pub fn new(store: Store, timeout: Duration, clock: Arc<dyn Clock>) -> Approvals {
        Approvals {
            store,
            timeout,
            clock,
        }
    }

    /// The time deadlines are measured against.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// Whether a stored "always" rule of the requester allows `arguments`
    /// (audited when one does).
    pub async fn ruled(
        &self,
        platform: Platform,
        requester: &User,
        tool_name: &str,
        arguments: &Value,
    ) -> Result<bool, ApprovalError> {
        if once_only(tool_name) {
            return Ok(false);
        }
        let arguments = arguments.to_string();
        let patterns = self
            .store
            .approvals()
            .rule_patterns(platform, requester.id, tool_name)
            .await?;
        if !patterns.iter().any(|p| rules::allows(p, &arguments)) {
            return Ok(false);
        }
        self.store
            .audit()
            .record(
                "approval.rule_applied",
                json!({ "tool": tool_name, "user": requester.id.0 }),
            )
            .await;
        Ok(true)
    }

    /// Records a pending approval; its card is shown by [`Approvals::show`]
    /// once the paused turn is stored.
    pub async fn record(&self, req: ApprovalRequest<'_>) -> Result<ApprovalRecord, ApprovalError> {
        let now = self.clock.now();
        let record = ApprovalRecord {
            id: req.id,
            session_id: req.session_id.clone(),
            tool_name: req.tool_name.to_owned(),
            tool_display: req.tool_display.to_owned(),
            arguments: req.arguments.to_string(),
            summary: req.summary,
            requester: req.requester.id,
            requester_name: req.requester.display_name.clone(),
            chat: req.chat,
            card_message: None,
            status: ApprovalStatus::Pending,
            decided_by: None,
            decided_by_name: None,
            decided_at: None,
            reason: None,
            created_at: now,
            expires_at: now
                + chrono::Duration::from_std(self.timeout).unwrap_or(chrono::Duration::minutes(10)),
        };
        self.store.approvals().insert(&record).await?;
        self.store
            .audit()
            .record(
                "approval.requested",
                json!({ "id": record.id, "tool": record.tool_name, "user": record.requester.0 }),
            )
            .await;
        Ok(record)
    }

    /// Shows the card of a recorded approval in its chat. A card that cannot
    /// be shown is denied ("card not delivered"): the caller resumes the turn.
    pub async fn show(
        &self,
        adapter: &dyn PlatformAdapter,
        record: &ApprovalRecord,
    ) -> Result<MessageRef, ApprovalError> {
        let card = card::pending_card(record, self.timeout);
        let card_ref = match adapter.send(&record.chat, card).await {
            Ok(r) => r,
            Err(e) => {
                let _ = self
                    .store
                    .approvals()
                    .decide(
                        &record.id,
                        ApprovalStatus::Denied,
                        None,
                        Some("card not delivered"),
                        self.clock.now(),
                    )
                    .await;
                return Err(ApprovalError::Card(e.to_string()));
            }
        };
        // The card is shown and the approval stored: a storage failure now
        // must not take the card back. Without its message id the card is
        // still decided by presses in its chat and by `/approve`.
        if let Err(e) = self
            .store
            .approvals()
            .set_card(&record.id, card_ref.id)
            .await
        {
            tracing::warn!(error = %e, "could not record an approval card's message; the card stays valid");
        }
        attach_full_text(adapter, record).await;
        // A text decision (`/approve`) may have landed between the card showing
        // and its id being stored, when nobody could edit it: finish it now.
        if let Some(decided) = self
            .store
            .approvals()
            .get(&record.id)
            .await
            .ok()
            .flatten()
            .filter(|r| r.status != ApprovalStatus::Pending)
        {
            if let Err(e) = adapter.edit(&card_ref, card::final_card(&decided)).await {
                tracing::warn!(error = %e, "could not update an approval card decided early");
            }
        }
        Ok(card_ref)
    }

    /// Expires `id` if it is still pending (the sweeper, in any process),
    /// marking its card. Returns whether this call expired it.
    pub(crate) async fn expire(
        &self,
        adapter: &dyn PlatformAdapter,
        id: &ApprovalId,
        card_ref: Option<MessageRef>,
    ) -> Result<bool, ApprovalError> {
        let Some(record) = self.store.approvals().expire(id, self.clock.now()).await? else {
            return Ok(false);
        };
        self.store
            .audit()
            .record("approval.expired", json!({ "id": id }))
            .await;
        // No card reference: the process died between showing the card and
        // storing its id. The decision still stands.
        if let Some(card_ref) = card_ref {
            if let Err(e) = adapter.edit(&card_ref, card::final_card(&record)).await {
                tracing::warn!(error = %e, "could not mark the approval card expired");
            }
        }
        Ok(true)
    }

    /// The shared decision path: the decided record, or `Ok(Err(text))`, a
    /// refusal for the presser.
    pub(crate) async fn decide(
        &self,
        id: &ApprovalId,
        platform: Platform,
        user: &User,
        choice: Choice,
        reason: Option<String>,
    ) -> Result<Result<ApprovalRecord, String>, StoreError> {
        let Some(record) = self.store.approvals().get(id).await? else {
            return Ok(Err(UNKNOWN.into()));
        };
        if let Some(refusal) = self.refusal(&record, platform, user, choice) {
            return Ok(Err(refusal));
        }
        // `always <prefix>` (text only) allows commands starting with it;
        // `always` alone, exactly these arguments.
        let (rule, reason) = match (choice, reason) {
            (Choice::Always, Some(prefix)) => {
                match rules::prefix_pattern(&record.tool_name, &record.arguments, &prefix) {
                    Ok(pattern) => (Some(pattern), None),
                    Err(refusal) => return Ok(Err(refusal)),
                }
            }
            (Choice::Always, None) => match rules::exact_pattern(&record.arguments) {
                Ok(pattern) => (Some(pattern), None),
                Err(refusal) => return Ok(Err(refusal)),
            },
            (_, reason) => (None, reason),
        };
        let status = match choice {
            Choice::AllowOnce => ApprovalStatus::Allowed,
            Choice::Always => ApprovalStatus::Always,
            Choice::Edit => ApprovalStatus::Edited,
            Choice::Deny => ApprovalStatus::Denied,
        };
        let decided = self
            .store
            .approvals()
            .decide(id, status, Some(user), reason.as_deref(), self.clock.now())
            .await?;
        let Some(decided) = decided else {
            return Ok(Err("Already decided.".into()));
        };
        if let Some(pattern) = rule {
            // The decision is recorded and stands: a rule that could not be
            // stored only means the next call asks again.
            if let Err(e) = self
                .store
                .approvals()
                .add_rule(
                    decided.chat.platform,
                    decided.requester,
                    &decided.tool_name,
                    &pattern,
                )
                .await
            {
                tracing::error!(error = %e, "could not store an always-allow rule; the decision stands");
            }
        }
        self.store
            .audit()
            .record(
                "approval.decided",
                json!({ "id": id, "status": status.as_str(), "by": user.id.0 }),
            )
            .await;
        Ok(Ok(decided))
    }
}

impl Approvals {
    /// Why `user` on `platform` may not make `choice` on `record` now, for
    /// them; `None` when they may.
    fn refusal(
        &self,
        record: &ApprovalRecord,
        platform: Platform,
        user: &User,
        choice: Choice,
    ) -> Option<String> {
        // User ids are per platform: the requester is who asked on that platform.
        let is_requester = record.chat.platform == platform && record.requester == user.id;
        if !is_requester && !user.is_approver {
            return Some(
                "Only the person who asked, or a configured approver, can decide this.".into(),
            );
        }
        if once_only(&record.tool_name) && matches!(choice, Choice::Always | Choice::Edit) {
            return Some(if record.tool_name == EXTERNAL_APPROVAL {
                "An external agent's request can only be allowed once or denied.".into()
            } else {
                "A change to the tools can only be allowed once or denied.".into()
            });
        }
        if from_mcp(record) && choice == Choice::Edit {
            return Some("A call from another agent cannot be edited; allow or deny it.".into());
        }
        if record.status != ApprovalStatus::Pending {
            return Some(format!("Already decided: {}.", status_word(record.status)));
        }
        if record.expires_at <= self.clock.now() {
            return Some("This approval has expired.".into());
        }
        None
    }
}

/// The refusal of a press or command naming no stored approval.
const UNKNOWN: &str = "This approval is unknown or no longer valid.";

/// The decision a stored record carries.
pub fn decision_of(record: &ApprovalRecord) -> Decision {
    match record.status {
        ApprovalStatus::Allowed => Decision::Allow,
        ApprovalStatus::Always => Decision::Always,
        ApprovalStatus::Edited => Decision::Edit,
        ApprovalStatus::Denied => Decision::Deny(record.reason.clone()),
        ApprovalStatus::Expired | ApprovalStatus::Pending => Decision::Expired,
    }
}

fn status_word(status: ApprovalStatus) -> &'static str {
    match status {
        ApprovalStatus::Allowed => "allowed once",
        ApprovalStatus::Always => "always allowed",
        ApprovalStatus::Denied => "denied",
        ApprovalStatus::Expired => "expired",
        ApprovalStatus::Edited => "sent back for editing",
        ApprovalStatus::Pending => "pending",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_store;
    use switchboard_platform::{ChatId, UserId};

    fn telegram_request(id: &str) -> ApprovalRecord {
        let mut record = crate::store::test_approval(id, 600);
        record.chat = ChatAddress::new(Platform::Telegram, ChatId(1), None);
        record
    }

    fn user(id: i64) -> User {
        User {
            id: UserId(id),
            display_name: "someone".into(),
            is_bot: false,
            is_approver: false,
        }
    }

    #[tokio::test]
    async fn the_same_user_id_on_another_platform_is_not_the_requester() {
        let (store, _dir) = test_store().await;
        let approvals = Approvals::new(
            store.clone(),
            Duration::from_secs(600),
            Arc::new(crate::clock::SystemClock),
        );
        store
            .approvals()
            .insert(&telegram_request("0123456789abcdef"))
            .await
            .unwrap();
        let ann = user(1);
        let typed =
            |platform| approvals.handle_text(platform, &ann, "01234567", Choice::AllowOnce, None);
        let refused = typed(Platform::Discord).await;
        assert!(
            refused.reply.contains("Only the person who asked"),
            "{}",
            refused.reply
        );
        assert!(refused.card.is_none() && refused.resume.is_none());
        let decided = typed(Platform::Telegram).await;
        assert!(
            decided.reply.starts_with("Recorded: allowed once"),
            "{}",
            decided.reply
        );
        let resumed = decided.resume.map(|r| r.id);
        assert_eq!(
            resumed.as_ref().map(ApprovalId::as_str),
            Some("0123456789abcdef")
        );
    }
}
