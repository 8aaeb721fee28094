//! Outbound payloads: messages with action rows of buttons (and a menu,
//! `forms.rs`), and interaction callback bodies. Markdown is kept as is:
//! Discord renders it.

use serde_json::{json, Value};
use std::collections::HashSet;
use switchboard_platform::{
    measure, Button, ButtonStyle, LengthUnit, OutgoingMessage, PlatformError,
};

/// Discord's content limit, in characters.
pub(crate) const MAX_CONTENT: usize = 2000;
const MAX_ROWS: usize = 5;
const MAX_PER_ROW: usize = 5;
const MAX_LABEL: usize = 80;

/// Interaction callback types.
pub(crate) const CALLBACK_MESSAGE: u8 = 4;
pub(crate) const CALLBACK_DEFERRED_UPDATE: u8 = 6;
pub(crate) const CALLBACK_UPDATE: u8 = 7;
/// Message flag: only the presser sees it.
pub(crate) const EPHEMERAL: u32 = 64;

/// The JSON body of a create (`reply` honoured) or edit (buttons replaced,
/// none removes them) message call.
pub(crate) fn message_body(
    message: &OutgoingMessage,
    create: bool,
) -> Result<Value, PlatformError> {
    let content = checked_content(&message.text)?;
    let mut components = action_rows(&message.buttons)?;
    if let Some(menu) = &message.menu {
        let taken = message
            .buttons
            .iter()
            .flatten()
            .any(|b| b.action == menu.action);
        if taken || components.len() >= MAX_ROWS {
            return Err(PlatformError::Rejected(
                "no room for the menu: its row would be the sixth, or its id is a button's".into(),
            ));
        }
        components.push(crate::forms::menu_row(menu)?);
    }
    if content.trim().is_empty() && components.is_empty() {
        return Err(PlatformError::Rejected(
            "Discord refuses an empty message".into(),
        ));
    }
    let mut body = json!({
        "content": content,
        "components": components,
        // Model output must not ping @everyone or arbitrary users; a reply still
        // notifies the person it answers.
        "allowed_mentions": { "parse": [], "replied_user": true },
    });
    if let (true, Some(reply_to)) = (create, message.reply_to) {
        body["message_reference"] = json!({
            "message_id": reply_to.get().to_string(),
            "fail_if_not_exists": false,
        });
    }
    Ok(body)
}

/// Type 7: replace the pressed message in the interaction response itself.
pub(crate) fn update_callback(message: &OutgoingMessage) -> Result<Value, PlatformError> {
    Ok(json!({ "type": CALLBACK_UPDATE, "data": edit_data(message)? }))
}

/// Type 4 with flags 64: a notice only the presser sees.
pub(crate) fn private_callback(text: &str) -> Value {
    json!({ "type": CALLBACK_MESSAGE, "data": private_data(text) })
}

/// Type 6: acknowledge without changing anything (also used to defer).
pub(crate) fn deferred_update_callback() -> Value {
    json!({ "type": CALLBACK_DEFERRED_UPDATE })
}

/// An ephemeral followup (after a deferral) or the `data` of a type 4 callback.
pub(crate) fn private_data(text: &str) -> Value {
    let text = if text.trim().is_empty() { "…" } else { text };
    json!({
        "content": truncate_chars(text, MAX_CONTENT),
        "flags": EPHEMERAL,
        "allowed_mentions": { "parse": [] },
    })
}

/// Content and components for an edit of the pressed message.
pub(crate) fn edit_data(message: &OutgoingMessage) -> Result<Value, PlatformError> {
    let mut body = message_body(message, false)?;
    if let Some(map) = body.as_object_mut() {
        map.remove("message_reference");
    }
    Ok(body)
}

fn checked_content(text: &str) -> Result<&str, PlatformError> {
    let len = measure(text, LengthUnit::Chars);
    if len > MAX_CONTENT {
        return Err(PlatformError::TooLong {
            len,
            max: MAX_CONTENT,
        });
    }
    Ok(text)
}

/// The core's rows, each split into rows of at most 5 buttons.
fn action_rows(rows: &[Vec<Button>]) -> Result<Vec<Value>, PlatformError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for row in rows.iter().filter(|r| !r.is_empty()) {
        for part in row.chunks(MAX_PER_ROW) {
            let mut buttons = Vec::with_capacity(part.len());
            for button in part {
                if !seen.insert(button.action.as_str()) {
                    return Err(PlatformError::Rejected(format!(
                        "two buttons share the action id {}",
                        button.action
                    )));
                }
                buttons.push(button_json(button));
            }
            out.push(json!({ "type": 1, "components": buttons }));
        }
    }
    if out.len() > MAX_ROWS {
        return Err(PlatformError::Rejected(format!(
            "{} rows of buttons; Discord allows {MAX_ROWS} rows of {MAX_PER_ROW}",
            out.len()
        )));
    }
    Ok(out)
}

fn button_json(button: &Button) -> Value {
    let style = match button.style {
        ButtonStyle::Primary => 1,
        ButtonStyle::Secondary => 2,
        ButtonStyle::Success => 3,
        ButtonStyle::Danger => 4,
    };
    let label = if button.label.trim().is_empty() {
        button
            .shortcut
            .map(|c| c.to_string())
            .unwrap_or_else(|| "·".to_owned())
    } else {
        truncate_chars(&button.label, MAX_LABEL)
    };
    json!({
        "type": 2,
        "style": style,
        "label": label,
        "custom_id": button.action.as_str(),
    })
}

pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => {
            let mut s: String = text[..cut].chars().take(max.saturating_sub(1)).collect();
            s.push('…');
            s
        }
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ActionId, MessageId};

    fn button(id: &str) -> Button {
        Button {
            label: format!("Button {id}"),
            action: ActionId::parse(id).unwrap_or_else(|| unreachable!()),
            style: ButtonStyle::Success,
            shortcut: None,
        }
    }

    #[test]
    fn replies_reference_the_user_message_and_keep_markdown() {
        let msg = OutgoingMessage::text("**bold** `code`").replying_to(Some(MessageId(42)));
        let body = message_body(&msg, true).unwrap_or_default();
        assert_eq!(body["content"], "**bold** `code`");
        assert_eq!(body["message_reference"]["message_id"], "42");
        assert_eq!(body["components"], json!([]));
        let edit = message_body(&msg, false).unwrap_or_default();
        assert!(edit.get("message_reference").is_none());
    }

    #[test]
    fn long_rows_are_split_into_rows_of_five() {
        let row: Vec<Button> = (0..7).map(|i| button(&format!("a{i}"))).collect();
        let body = message_body(&OutgoingMessage::text("card").with_buttons(vec![row]), true)
            .unwrap_or_default();
        let rows = body["components"].as_array().cloned().unwrap_or_default();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["components"].as_array().map(Vec::len), Some(5));
        assert_eq!(rows[1]["components"][1]["custom_id"], "a6");
        assert_eq!(rows[1]["components"][1]["style"], 3);
    }

    #[test]
    fn limits_are_refused_locally() {
        let long = OutgoingMessage::text("x".repeat(2001));
        assert!(matches!(
            message_body(&long, true),
            Err(PlatformError::TooLong {
                len: 2001,
                max: 2000
            })
        ));
        let fits = OutgoingMessage::text("é".repeat(2000));
        assert!(message_body(&fits, true).is_ok());
        let rows: Vec<Vec<Button>> = (0..6).map(|i| vec![button(&format!("r{i}"))]).collect();
        assert!(message_body(&OutgoingMessage::text("x").with_buttons(rows), true).is_err());
        let dup = vec![vec![button("same"), button("same")]];
        assert!(message_body(&OutgoingMessage::text("x").with_buttons(dup), true).is_err());
        assert!(message_body(&OutgoingMessage::text(" "), true).is_err());
    }

    #[test]
    fn callbacks_have_the_documented_shapes() {
        let update = update_callback(&OutgoingMessage::text("Approved")).unwrap_or_default();
        assert_eq!(update["type"], 7);
        assert_eq!(update["data"]["components"], json!([]));
        let private = private_callback("not yours");
        assert_eq!(private["type"], 4);
        assert_eq!(private["data"]["flags"], 64);
        assert_eq!(deferred_update_callback(), json!({"type": 6}));
        let long = private_data(&"y".repeat(3000));
        assert_eq!(
            long["content"].as_str().map(|s| s.chars().count()),
            Some(2000)
        );
    }
}
