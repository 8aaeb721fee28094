//! Presses on approval cards: a press decides only its own card and only
//! for the requester or an approver; every press is answered. Where the
//! platform has forms, Edit opens one holding the call's arguments (a
//! Discord modal) and the form sent back is checked like any edit before it
//! sends the call back with them; elsewhere (or when no form fits) Edit
//! waits for the requester's next message as today.

use super::{card, edit, edit_form, Approvals, Choice, BOOKKEEPING_CHECKS, BOOKKEEPING_WAIT};
use crate::domain::ApprovalId;
use crate::store::{ApprovalRecord, ApprovalStatus, StoreError};
use crate::tools::ToolRegistry;
use serde_json::Value;
use switchboard_platform::{ButtonPress, FieldValue, PlatformAdapter, PlatformError, PressAnswer};

/// A press that decided its approval: the caller resumes the paused turn,
/// with `edited_to` as the call's new arguments when a form sent them.
#[derive(Debug)]
pub struct Decided {
    pub record: ApprovalRecord,
    pub edited_to: Option<Value>,
}

/// What a press's card check found.
enum OnCard {
    /// The press is on the approval's card (or its chat, when the card's
    /// message is unknown).
    Card(Box<ApprovalRecord>),
    /// No such approval (`decide` says so).
    Unknown,
    /// The press carries the approval's data on another message.
    Refused(String),
}

const FAILED: &str = "Something went wrong recording your decision; please try again.";

impl Approvals {
    /// Handles a press on an approval card: authorizes the presser, records
    /// the decision and updates the card — or, for Edit on a platform with
    /// forms, opens the form, and for the form sent back, checks the new
    /// arguments (against `tools`) before recording. Every press is answered.
    pub async fn handle_press(
        &self,
        adapter: &dyn PlatformAdapter,
        press: &ButtonPress,
        id: &ApprovalId,
        choice: Choice,
        tools: &ToolRegistry,
    ) -> Option<Decided> {
        if choice == Choice::Edit {
            if let Some(sent) = press.input.form() {
                return self.form_sent(adapter, press, id, sent, tools).await;
            }
            if adapter.capabilities().forms && self.open_form(adapter, press, id, tools).await {
                return None;
            }
        }
        let decided = match self.press_on_card(press, id).await {
            Ok(OnCard::Card(_) | OnCard::Unknown) => {
                self.decide(id, press.chat.platform, &press.user, choice, None)
                    .await
            }
            Ok(OnCard::Refused(refusal)) => Ok(Err(refusal)),
            Err(e) => Err(e),
        };
        let (answer, decided) = match decided {
            Ok(Ok(record)) => (PressAnswer::Update(card::final_card(&record)), Some(record)),
            Ok(Err(refusal)) => (PressAnswer::Private(refusal), None),
            Err(e) => {
                tracing::error!(error = %e, "approval decision failed");
                (PressAnswer::Private(FAILED.into()), None)
            }
        };
        answer_press(adapter, press, answer).await;
        decided.map(|record| Decided {
            record,
            edited_to: None,
        })
    }

    /// Edit pressed where forms exist: answers with the form of the call's
    /// arguments, or with the refusal the presser gets. `false` when it
    /// answered nothing — no form fits the arguments, or the platform can no
    /// longer open one (the press waited too long): Edit then goes the way
    /// it goes without forms.
    async fn open_form(
        &self,
        adapter: &dyn PlatformAdapter,
        press: &ButtonPress,
        id: &ApprovalId,
        tools: &ToolRegistry,
    ) -> bool {
        let record = match self.press_on_card(press, id).await {
            Ok(OnCard::Card(record)) => record,
            Ok(OnCard::Refused(refusal)) => {
                answer_press(adapter, press, PressAnswer::Private(refusal)).await;
                return true;
            }
            Ok(OnCard::Unknown) | Err(_) => return false,
        };
        if let Some(refusal) = self.refusal(&record, press.chat.platform, &press.user, Choice::Edit)
        {
            answer_press(adapter, press, PressAnswer::Private(refusal)).await;
            return true;
        }
        let tool = tools.get(&record.tool_name);
        let Some(form) = edit_form::form_for(&record, tool.as_ref().map(|t| &t.spec().parameters))
        else {
            return false;
        };
        match adapter.answer_press(press, PressAnswer::Form(form)).await {
            Ok(()) => true,
            Err(PlatformError::Unsupported(why)) => {
                tracing::info!(approval = %id, "no form for this Edit ({why}); waiting for a message instead");
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not open an edit form; waiting for a message instead");
                false
            }
        }
    }

    /// The form of Edit sent back: its arguments checked like every edit;
    /// when they pass, the approval is sent back with them (the card says
    /// so), else the presser is told why and the card stays open.
    async fn form_sent(
        &self,
        adapter: &dyn PlatformAdapter,
        press: &ButtonPress,
        id: &ApprovalId,
        sent: &[FieldValue],
        tools: &ToolRegistry,
    ) -> Option<Decided> {
        let (answer, decided) = match self.edit_from_form(press, id, sent, tools).await {
            Ok(Ok((record, arguments))) => (
                PressAnswer::Update(card::form_edited_card(&record)),
                Some(Decided {
                    record,
                    edited_to: Some(arguments),
                }),
            ),
            Ok(Err(refusal)) => (PressAnswer::Private(refusal), None),
            Err(e) => {
                tracing::error!(error = %e, "approval edit failed");
                (PressAnswer::Private(FAILED.into()), None)
            }
        };
        answer_press(adapter, press, answer).await;
        decided
    }

    /// The approval sent back with the form's arguments, or the refusal.
    async fn edit_from_form(
        &self,
        press: &ButtonPress,
        id: &ApprovalId,
        sent: &[FieldValue],
        tools: &ToolRegistry,
    ) -> Result<Result<(ApprovalRecord, Value), String>, StoreError> {
        let record = match self.press_on_card(press, id).await? {
            OnCard::Card(record) => *record,
            OnCard::Unknown => return Ok(Err(super::UNKNOWN.into())),
            OnCard::Refused(refusal) => return Ok(Err(refusal)),
        };
        let platform = press.chat.platform;
        if let Some(refusal) = self.refusal(&record, platform, &press.user, Choice::Edit) {
            return Ok(Err(refusal));
        }
        let tool = tools.get(&record.tool_name);
        let schema = tool.as_ref().map(|t| &t.spec().parameters);
        let caller = self.store.turns().origin(id).await?;
        let checked = edit_form::arguments_from(&record, schema, sent).and_then(|arguments| {
            edit::check(tool.as_deref(), &arguments, caller.as_ref()).map(|()| arguments)
        });
        let arguments = match checked {
            Ok(arguments) => arguments,
            Err(why) => {
                return Ok(Err(format!(
                    "These arguments can't be used: {why}. The card is still open; press Edit to try again."
                )))
            }
        };
        let decided = self
            .decide(id, platform, &press.user, Choice::Edit, None)
            .await?;
        Ok(decided.map(|record| (record, arguments)))
    }

    /// A press decides only the card it was made on: the approval's own chat
    /// and, once the card is sent, the card's own message. A press carrying
    /// approval C's data on some other message is refused (and that message
    /// is left alone), so C's real card keeps its buttons.
    async fn press_on_card(
        &self,
        press: &ButtonPress,
        id: &ApprovalId,
    ) -> Result<OnCard, StoreError> {
        let Some(mut record) = self.store.approvals().get(id).await? else {
            return Ok(OnCard::Unknown);
        };
        // The card is being shown right now and its message is not recorded
        // yet: a press naming a message waits (briefly) for that bookkeeping,
        // so it can be matched to the card.
        if press.message.is_some() {
            for _ in 0..BOOKKEEPING_CHECKS {
                if record.card_message.is_some() || record.status != ApprovalStatus::Pending {
                    break;
                }
                tokio::time::sleep(BOOKKEEPING_WAIT).await;
                match self.store.approvals().get(id).await? {
                    Some(r) => record = r,
                    None => return Ok(OnCard::Unknown),
                }
            }
        }
        let same_chat =
            press.chat.platform == record.chat.platform && press.chat.chat == record.chat.chat;
        let same_message = match (&press.message, record.card_message) {
            (Some(pressed), Some(card)) => {
                pressed.id == card && pressed.chat.chat == record.chat.chat
            }
            // Never recorded (storage failed then), or the platform does not
            // say which message: the chat decides.
            _ => true,
        };
        if same_chat && same_message {
            return Ok(OnCard::Card(Box::new(record)));
        }
        tracing::warn!(
            approval = %id,
            "press for an approval on a message that is not its card"
        );
        Ok(OnCard::Refused(
            "This button does not belong to this message.".into(),
        ))
    }
}

async fn answer_press(adapter: &dyn PlatformAdapter, press: &ButtonPress, answer: PressAnswer) {
    if let Err(e) = adapter.answer_press(press, answer).await {
        tracing::warn!(error = %e, "could not answer an approval press");
    }
}
