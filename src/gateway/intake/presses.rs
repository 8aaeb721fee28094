//! A button press: an approval card's (authorized, decided once, the paused
//! turn resumed; its Edit form opened or sent back), a feedback button's, a
//! 💭 reasoning page's, a profile suggestion's Apply / Dismiss, a choice in a
//! `/model` or `/queue` menu, or one that is no longer valid.

use crate::approvals::{parse_action, Decided};
use crate::gateway::intake::press_limit::{self, PressKind};
use crate::gateway::session::queue::{resume_edited, resume_in};
use crate::gateway::turn::{memory, profile_card, reasoning};
use crate::gateway::Inner;
use crate::memory::parse_feedback;
use crate::store::ApprovalStatus;
use std::sync::Arc;
use switchboard_platform::{ButtonPress, PressAnswer};

/// Handles one press (on its own task, spawned by the router).
pub(in crate::gateway) async fn handle(inner: Arc<Inner>, press: ButtonPress) {
    let Some(adapter) = inner.adapter(press.chat.platform) else {
        return;
    };
    if let Some(parent) = press.parent {
        let chat = press.chat;
        inner
            .platforms
            .parents
            .note(&inner.store, chat.platform, chat.chat, parent);
    }
    match parse_action(&press.action) {
        Some((id, choice)) => {
            if !press_limit::admit(&inner, adapter.as_ref(), &press, PressKind::Approval).await {
                return;
            }
            let tools = inner.agent.tools();
            let decided = inner
                .approvals
                .handle_press(adapter.as_ref(), &press, &id, choice, tools)
                .await;
            match decided {
                // Sent back with a form's arguments: a new card asks about them.
                Some(Decided {
                    record,
                    edited_to: Some(arguments),
                }) => resume_edited(&inner, &record, &arguments),
                // An edit without them waits for the requester's next message.
                Some(Decided { record, .. }) if record.status == ApprovalStatus::Edited => {}
                // The paused turn resumes from its row.
                Some(Decided { record, .. }) => resume_in(&inner, &record),
                None => {}
            }
        }
        None if crate::gateway::commands::choices::parse_action(&press.action).is_some() => {
            if press_limit::admit(&inner, adapter.as_ref(), &press, PressKind::Feedback).await {
                super::menu_press::on_press(&inner, &adapter, &press).await
            }
        }
        None if parse_feedback(&press.action).is_some() => {
            if press_limit::admit(&inner, adapter.as_ref(), &press, PressKind::Feedback).await {
                memory::on_feedback_press(&inner, adapter.as_ref(), &press).await
            }
        }
        None if profile_card::parse_action(&press.action).is_some() => {
            if press_limit::admit(&inner, adapter.as_ref(), &press, PressKind::Feedback).await {
                profile_card::on_press(&inner, adapter.as_ref(), &press).await
            }
        }
        None if reasoning::parse_action(&press.action).is_some() => {
            if press_limit::admit(&inner, adapter.as_ref(), &press, PressKind::Reading).await {
                reasoning::on_press(&inner, adapter.as_ref(), &press).await
            }
        }
        None => {
            tracing::info!(action = %press.action, "press on an unknown button");
            let answer = PressAnswer::Private("This button is no longer valid.".into());
            if let Err(e) = adapter.answer_press(&press, answer).await {
                tracing::warn!(error = %e, "could not answer a press");
            }
        }
    }
}
