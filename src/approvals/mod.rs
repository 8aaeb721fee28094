//! Approvals: asking before a risky tool runs, recording the decision (first one
//! wins), "always allow" rules, expiry, and answering the buttons.

mod card;
mod card_layout;
mod edit;
mod rules;
mod text;

pub(crate) use card::pending_card;
pub use card::{action_id, parse_action, short_id, Choice};
pub use card_layout::CARD_SHOWN_CHARS;
pub(crate) use edit::{edited_arguments, prompt as edit_prompt};
pub use rules::describe as describe_rule;
pub use text::TextDecision;

use crate::clock::Clock;
use crate::store::{ApprovalRecord, ApprovalStatus, Store, StoreError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchboard_platform::{
    ButtonPress, ChatAddress, MessageRef, OutgoingFile, Platform, PlatformAdapter, PressAnswer,
    User,
};
use tokio::sync::oneshot;

/// What the requester (or an approver) decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Always,
    /// The requester's next message replaces the arguments.
    Edit,
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
    /// The approval's id, a simple (hex) UUID chosen by the caller so it can get
    /// ready for the decision before the card is shown.
    pub id: String,
    pub session_id: &'a str,
    pub requester: &'a User,
    pub chat: ChatAddress,
    pub tool_name: &'a str,
    pub tool_display: &'a str,
    pub arguments: &'a Value,
    pub summary: String,
}

/// Sends the full summary as a file when the card shows only its start. Best
/// effort: the card (and its decision) stands without it.
async fn attach_full_text(adapter: &dyn PlatformAdapter, record: &ApprovalRecord) {
    let Some(name) = card_layout::Shown::of(&record.tool_name, &record.summary).file_name() else {
        return;
    };
    let file = OutgoingFile::document(record.chat, name, record.summary.clone().into_bytes())
        .with_caption(format!(
            "Full text of approval {} ({} characters)",
            short_id(&record.id),
            crate::text::grouped(record.summary.chars().count())
        ));
    if let Err(e) = adapter.send_file(file).await {
        tracing::warn!(error = %e, "could not attach the full text of an approval card");
    }
}

/// How often a waiting turn checks the database for a decision made elsewhere.
const DB_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// The result of [`Approvals::open`].
pub enum Opened {
    /// A stored "always" rule allows it; no card was shown.
    Ruled,
    Pending(PendingApproval),
}

/// An approval whose card is shown, waiting for a decision.
pub struct PendingApproval {
    pub id: String,
    pub card: MessageRef,
    expires_at: chrono::DateTime<chrono::Utc>,
    rx: oneshot::Receiver<Decision>,
}

/// The approvals service. Decisions live in the database; the waiters here are
/// the in-process cache that wakes the paused turn.
pub struct Approvals {
    store: Store,
    timeout: Duration,
    clock: Arc<dyn Clock>,
    waiters: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
}

impl Approvals {
    pub fn new(store: Store, timeout: Duration, clock: Arc<dyn Clock>) -> Approvals {
        Approvals {
            store,
            timeout,
            clock,
            waiters: Mutex::new(HashMap::new()),
        }
    }

    /// The time deadlines are measured against.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// Applies a stored "always" rule, or records the approval and shows its
    /// card. Waiting is a separate step so the caller can persist the paused
    /// turn in between.
    pub async fn open(
        &self,
        adapter: &dyn PlatformAdapter,
        req: ApprovalRequest<'_>,
    ) -> Result<Opened, ApprovalError> {
        let platform = req.chat.platform;
        let arguments = req.arguments.to_string();
        let patterns = self
            .store
            .rule_patterns(platform, req.requester.id, req.tool_name)
            .await?;
        if patterns.iter().any(|p| rules::allows(p, &arguments)) {
            self.store
                .record_event(
                    "approval.rule_applied",
                    json!({ "tool": req.tool_name, "user": req.requester.id.0 }),
                )
                .await;
            return Ok(Opened::Ruled);
        }
        let now = self.clock.now();
        let record = ApprovalRecord {
            id: req.id,
            session_id: req.session_id.to_owned(),
            tool_name: req.tool_name.to_owned(),
            tool_display: req.tool_display.to_owned(),
            arguments,
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
        self.store.insert_approval(&record).await?;
        self.store
            .record_event(
                "approval.requested",
                json!({ "id": record.id, "tool": record.tool_name, "user": record.requester.0 }),
            )
            .await;
        let (tx, rx) = oneshot::channel();
        self.waiters_lock().insert(record.id.clone(), tx);
        let card = card::pending_card(&record, self.timeout);
        let card_ref = match adapter.send(&req.chat, card).await {
            Ok(r) => r,
            Err(e) => {
                self.waiters_lock().remove(&record.id);
                let _ = self
                    .store
                    .decide_approval(
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
        // still decided by presses in its chat, by `/approve`, and edited by
        // this process, which holds the card's reference.
        if let Err(e) = self.store.set_approval_card(&record.id, card_ref.id).await {
            tracing::warn!(error = %e, "could not record an approval card's message; the card stays valid");
        }
        attach_full_text(adapter, &record).await;
        // A text decision (`/approve`) may have landed between the card showing
        // and its id being stored, when nobody could edit it: finish it now.
        if let Some(decided) = self
            .store
            .approval(&record.id)
            .await
            .ok()
            .flatten()
            .filter(|r| r.status != ApprovalStatus::Pending)
        {
            if let Err(e) = adapter.edit(&card_ref, card::final_card(&decided)).await {
                tracing::warn!(error = %e, "could not update an approval card decided early");
            }
        }
        Ok(Opened::Pending(PendingApproval {
            id: record.id,
            card: card_ref,
            expires_at: record.expires_at,
            rx,
        }))
    }

    /// Waits for the decision: woken at once by a press in this process, and
    /// polling the database for decisions made by other processes. Expires it
    /// when the deadline (by the approvals' clock) passes.
    pub async fn wait(
        &self,
        adapter: &dyn PlatformAdapter,
        pending: PendingApproval,
    ) -> Result<Decision, ApprovalError> {
        let id = pending.id.clone();
        let decision = self.wait_for(adapter, pending).await;
        // A press that lost to the expiry puts its waiter back: drop it.
        self.waiters_lock().remove(&id);
        decision
    }

    async fn wait_for(
        &self,
        adapter: &dyn PlatformAdapter,
        pending: PendingApproval,
    ) -> Result<Decision, ApprovalError> {
        let PendingApproval {
            id,
            card,
            expires_at,
            mut rx,
        } = pending;
        loop {
            let left = (expires_at - self.clock.now())
                .to_std()
                .unwrap_or(Duration::ZERO);
            if left.is_zero() {
                return self.expire(adapter, &id, Some(card)).await;
            }
            tokio::select! {
                decided = &mut rx => match decided {
                    Ok(decision) => return Ok(decision),
                    Err(_) => return self.expire(adapter, &id, Some(card)).await,
                },
                () = tokio::time::sleep(left.min(DB_POLL)) => match self.store.approval(&id).await {
                    // Decided elsewhere — unless a press in this process is
                    // writing it right now (it holds the waiter and wakes us).
                    Ok(Some(record)) if record.status != ApprovalStatus::Pending => {
                        if self.waiters_lock().remove(&id).is_some() {
                            return Ok(decision_of(&record));
                        }
                    }
                    Ok(_) => {}
                    // A locked or briefly unreachable database must not end the
                    // wait: the card stays valid and a local press still wakes us.
                    Err(e) => tracing::warn!(error = %e, approval = %id, "could not poll an approval; still waiting"),
                },
            }
        }
    }

    /// The waiter's deadline passed: expire it unless a decision won the race.
    pub(crate) async fn expire(
        &self,
        adapter: &dyn PlatformAdapter,
        id: &str,
        card_ref: Option<MessageRef>,
    ) -> Result<Decision, ApprovalError> {
        self.waiters_lock().remove(id);
        match self.store.expire_approval(id, self.clock.now()).await? {
            Some(record) => {
                self.store
                    .record_event("approval.expired", json!({ "id": id }))
                    .await;
                // No card reference: the process died between showing the
                // card and storing its id. The decision still stands.
                if let Some(card_ref) = card_ref {
                    let card = card::final_card(&record);
                    if let Err(e) = adapter.edit(&card_ref, card).await {
                        tracing::warn!(error = %e, "could not mark the approval card expired");
                    }
                }
                Ok(Decision::Expired)
            }
            None => Ok(self
                .store
                .approval(id)
                .await?
                .map_or(Decision::Expired, |r| decision_of(&r))),
        }
    }

    /// Handles a press on an approval button: authorizes the presser, records
    /// the decision, updates the card and wakes the waiting turn. Every press is
    /// answered.
    /// Returns `true` when the decision was recorded but no turn in this process
    /// waits for it — the caller resumes the paused turn from its stored state.
    pub async fn handle_press(
        &self,
        adapter: &dyn PlatformAdapter,
        press: &ButtonPress,
        id: &str,
        choice: Choice,
    ) -> bool {
        let mut orphaned = false;
        let decided = match self.press_on_card(press, id).await {
            Ok(None) => {
                self.decide(id, press.chat.platform, &press.user, choice, None)
                    .await
            }
            Ok(Some(refusal)) => Ok(Err(refusal)),
            Err(e) => Err(e),
        };
        let answer = match decided {
            Ok(Ok((record, woke))) => {
                orphaned = !woke;
                PressAnswer::Update(card::final_card(&record))
            }
            Ok(Err(refusal)) => PressAnswer::Private(refusal),
            Err(e) => {
                tracing::error!(error = %e, "approval decision failed");
                PressAnswer::Private(
                    "Something went wrong recording your decision; please try again.".into(),
                )
            }
        };
        if let Err(e) = adapter.answer_press(press, answer).await {
            tracing::warn!(error = %e, "could not answer an approval press");
        }
        orphaned
    }

    /// A press decides only the card it was made on: the approval's own chat
    /// and, once the card is sent, the card's own message. A press carrying
    /// approval C's data on some other message is refused (and that message
    /// is left alone), so C's real card keeps its buttons. `Some(text)` is the
    /// refusal for the presser.
    async fn press_on_card(
        &self,
        press: &ButtonPress,
        id: &str,
    ) -> Result<Option<String>, StoreError> {
        let Some(record) = self.store.approval(id).await? else {
            return Ok(None); // `decide` says it is unknown
        };
        let same_chat =
            press.chat.platform == record.chat.platform && press.chat.chat == record.chat.chat;
        let same_message = match (&press.message, record.card_message) {
            (Some(pressed), Some(card)) => {
                pressed.id == card && pressed.chat.chat == record.chat.chat
            }
            // Not yet recorded (the press raced the card's own bookkeeping),
            // or the platform does not say which message: the chat decides.
            _ => true,
        };
        if same_chat && same_message {
            return Ok(None);
        }
        tracing::warn!(
            approval = id,
            "press for an approval on a message that is not its card"
        );
        Ok(Some("This button does not belong to this message.".into()))
    }

    /// The shared decision path: the decided record and whether a waiting turn
    /// in this process was woken. `Ok(Err(text))` is a refusal for the presser.
    pub(crate) async fn decide(
        &self,
        id: &str,
        platform: Platform,
        user: &User,
        choice: Choice,
        reason: Option<String>,
    ) -> Result<Result<(ApprovalRecord, bool), String>, StoreError> {
        let Some(record) = self.store.approval(id).await? else {
            return Ok(Err("This approval is unknown or no longer valid.".into()));
        };
        // User ids are per platform: the requester is who asked on that platform.
        let is_requester = record.chat.platform == platform && record.requester == user.id;
        if !is_requester && !user.is_approver {
            return Ok(Err(
                "Only the person who asked, or a configured approver, can decide this.".into(),
            ));
        }
        if record.status != ApprovalStatus::Pending {
            return Ok(Err(format!(
                "Already decided: {}.",
                status_word(record.status)
            )));
        }
        if record.expires_at <= self.clock.now() {
            return Ok(Err("This approval has expired.".into()));
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
        // The local waiter is held while the decision is written, so the
        // waiting turn's database poll cannot take it in between: the turn is
        // woken here or not at all, and `woke` is exact.
        let waiter = self.waiters_lock().remove(id);
        let decided = self
            .store
            .decide_approval(id, status, Some(user), reason.as_deref(), self.clock.now())
            .await;
        let decided = match decided {
            Ok(Some(decided)) => decided,
            failed => {
                if let Some(waiter) = waiter {
                    self.waiters_lock().insert(id.to_owned(), waiter);
                }
                return match failed {
                    Err(e) => Err(e),
                    _ => Ok(Err("Already decided.".into())),
                };
            }
        };
        if let Some(pattern) = rule {
            // The decision is recorded and stands: a rule that could not be
            // stored only means the next call asks again.
            if let Err(e) = self
                .store
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
            .record_event(
                "approval.decided",
                json!({ "id": id, "status": status.as_str(), "by": user.id.0 }),
            )
            .await;
        let woke = match waiter {
            Some(waiter) => waiter.send(decision_of(&decided)).is_ok(),
            None => false,
        };
        Ok(Ok((decided, woke)))
    }

    fn waiters_lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Decision>>> {
        self.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }
}

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
            .insert_approval(&telegram_request("0123456789abcdef"))
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
        assert!(refused.card.is_none() && refused.orphaned.is_none());
        let decided = typed(Platform::Telegram).await;
        assert!(
            decided.reply.starts_with("Recorded: allowed once"),
            "{}",
            decided.reply
        );
        assert_eq!(decided.orphaned.as_deref(), Some("0123456789abcdef"));
    }
}
