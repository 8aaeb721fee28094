//! Approval cards: the pending card with its buttons and the final, decided card.

use super::card_layout::{clip_name, Shown};
use crate::domain::ApprovalId;
use crate::store::{ApprovalRecord, ApprovalStatus};
use crate::visible::{visible, visible_command};
use switchboard_platform::{ActionId, Button, ButtonStyle, OutgoingMessage};

/// A choice on an approval card; its short code travels in the action id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    AllowOnce,
    Always,
    Edit,
    Deny,
}

impl Choice {
    const ALL: [Choice; 4] = [
        Choice::AllowOnce,
        Choice::Always,
        Choice::Edit,
        Choice::Deny,
    ];

    fn code(self) -> char {
        match self {
            Choice::AllowOnce => 'y',
            Choice::Always => 'a',
            Choice::Edit => 'e',
            Choice::Deny => 'n',
        }
    }

    fn label(self) -> &'static str {
        match self {
            Choice::AllowOnce => "✅ Allow once",
            Choice::Always => "♾️ Always",
            Choice::Edit => "✏️ Edit",
            Choice::Deny => "⛔ Deny",
        }
    }

    fn style(self) -> ButtonStyle {
        match self {
            Choice::AllowOnce => ButtonStyle::Success,
            Choice::Always => ButtonStyle::Primary,
            Choice::Edit => ButtonStyle::Secondary,
            Choice::Deny => ButtonStyle::Danger,
        }
    }

    /// Parses the words of the `/approve <id> allow|always|edit|deny` fallback.
    pub fn from_word(word: &str) -> Option<Choice> {
        match word.to_ascii_lowercase().as_str() {
            "allow" | "y" | "yes" | "once" => Some(Choice::AllowOnce),
            "always" | "a" => Some(Choice::Always),
            "edit" | "e" => Some(Choice::Edit),
            "deny" | "n" | "no" => Some(Choice::Deny),
            _ => None,
        }
    }
}

const PREFIX: &str = "ap:";

/// The action id of `choice` on approval `id`: `ap:<32 hex>:<code>` (38 bytes).
pub fn action_id(id: &ApprovalId, choice: Choice) -> Option<ActionId> {
    ActionId::parse(&format!("{PREFIX}{id}:{}", choice.code()))
}

/// Parses an approval action id back into (approval id, choice).
pub fn parse_action(action: &ActionId) -> Option<(ApprovalId, Choice)> {
    let rest = action.as_str().strip_prefix(PREFIX)?;
    let (id, code) = rest.rsplit_once(':')?;
    let choice = Choice::ALL
        .into_iter()
        .find(|c| code.len() == 1 && code.starts_with(c.code()))?;
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some((id.parse().ok()?, choice))
}

/// What the card says of the call: who asked for what, the summary (its
/// start only when long, see [`Shown`]) and the id.
fn body(record: &ApprovalRecord) -> String {
    // Shown as it will run: hidden, bidi and look-alike characters escaped
    // and counted (see `visible`), so the text cannot pass for another; the
    // length limits count what the card shows.
    let requester = visible(&record.requester_name);
    let mut summary = if record.tool_name == "exec_command" {
        visible_command(&record.summary)
    } else {
        visible(&record.summary)
    };
    summary.escaped += requester.escaped;
    let shown = Shown::of(&record.tool_name, &summary.text);
    format!(
        "**{}** (`{}`) requested by {}\n{}```\n{}\n```{}\nid `{}`",
        clip_name(&record.tool_display),
        clip_name(&record.tool_name),
        clip_name(&requester.text),
        summary.warning(),
        shown.text().replace("```", "ʼʼʼ"),
        shown.note(),
        record.id.short()
    )
}

/// The card while it waits for a decision.
pub fn pending_card(record: &ApprovalRecord, timeout: std::time::Duration) -> OutgoingMessage {
    // The record's own deadline: an MCP client chooses its approval's.
    let expires = expires_in(
        (record.expires_at - record.created_at)
            .to_std()
            .unwrap_or(timeout),
    );
    let external = record.tool_name == super::EXTERNAL_APPROVAL;
    let once = super::once_only(&record.tool_name);
    let mcp = super::from_mcp(record);
    let buttons: Vec<Button> = Choice::ALL
        .into_iter()
        .filter(|c| !once || matches!(c, Choice::AllowOnce | Choice::Deny))
        .filter(|c| !mcp || *c != Choice::Edit)
        .filter_map(|c| {
            action_id(&record.id, c).map(|action| Button {
                label: c.label().into(),
                action,
                style: c.style(),
                shortcut: Some(c.code()),
            })
        })
        .collect();
    let prefix_hint = if record.tool_name == "exec_command" {
        format!(
            "\nTo allow every command starting with some words: `/approve {} always <words>`.",
            record.id.short()
        )
    } else {
        String::new()
    };
    let who = if external {
        "Only an approver can decide."
    } else {
        "Only the requester or an approver can decide."
    };
    OutgoingMessage::text(format!(
        "🔐 **Approval needed**\n{}\nExpires in {expires}. {who}{prefix_hint}",
        body(record)
    ))
    .with_buttons(vec![buttons])
}

/// The card once decided or expired: no buttons, who decided and when.
pub fn final_card(record: &ApprovalRecord) -> OutgoingMessage {
    let who = decided_by(record);
    let head = match record.status {
        ApprovalStatus::Allowed => format!("✅ **Allowed once**{who}"),
        ApprovalStatus::Always => format!("♾️ **Always allowed**{who}"),
        ApprovalStatus::Denied => {
            let reason = record
                .reason
                .as_deref()
                .map(|r| format!(" — {}", clip_name(&visible(r).text)))
                .unwrap_or_default();
            format!("⛔ **Denied**{who}{reason}")
        }
        ApprovalStatus::Expired => {
            "⌛ **Expired** without a decision (treated as denied)".to_owned()
        }
        ApprovalStatus::Edited => {
            format!(
                "✏️ **Editing**{who}: {}",
                super::edit::prompt(&record.arguments)
            )
        }
        ApprovalStatus::Pending => "🔐 **Approval needed**".to_owned(),
    };
    OutgoingMessage::text(format!("{head}\n{}", body(record)))
}

/// The card once its form sent the call back with new arguments: no
/// buttons, who edited it and when; the new card follows.
pub fn form_edited_card(record: &ApprovalRecord) -> OutgoingMessage {
    let who = decided_by(record);
    OutgoingMessage::text(format!(
        "✏️ **Edited**{who}: a new card asks about the new arguments.\n{}",
        body(record)
    ))
}

/// " by Ann at 14:02 UTC": who decided and when, as far as known.
fn decided_by(record: &ApprovalRecord) -> String {
    let who = record
        .decided_by_name
        .as_deref()
        .map(|n| format!(" by {}", clip_name(n)))
        .unwrap_or_default();
    let when = record
        .decided_at
        .map(|t| t.format(" at %H:%M UTC").to_string())
        .unwrap_or_default();
    format!("{who}{when}")
}

/// "20 s", "10 min", "1 min 30 s".
fn expires_in(timeout: std::time::Duration) -> String {
    match timeout.as_secs() {
        s if s < 60 => format!("{s} s"),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{} min {} s", s / 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_ids_round_trip_and_fit_telegram() {
        let id = ApprovalId::new();
        for c in Choice::ALL {
            let a = action_id(&id, c).unwrap();
            assert!(a.as_str().len() <= 64);
            assert_eq!(parse_action(&a), Some((id.clone(), c)));
        }
        for bad in ["ap:xyz:y", "ap::y", "ap:abcd:q", "fb:abcd:y", "ap:abcd:yy"] {
            assert_eq!(parse_action(&ActionId::parse(bad).unwrap()), None, "{bad}");
        }
    }

    #[test]
    fn the_expiry_is_shown_as_configured() {
        use std::time::Duration;
        assert_eq!(expires_in(Duration::from_secs(20)), "20 s");
        assert_eq!(expires_in(Duration::from_secs(600)), "10 min");
        assert_eq!(expires_in(Duration::from_secs(90)), "1 min 30 s");
    }
}
