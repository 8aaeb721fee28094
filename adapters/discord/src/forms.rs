//! Modals and select menus: the type 9 callback that opens a form, the
//! action row of a menu under a message, and the values a modal submit or a
//! menu choice sends back. Discord's limits are applied here: a form's title
//! and labels are clipped, a menu's texts too; what cannot be clipped (too
//! many fields or options, an over-long id or value) is refused locally.

use crate::render::truncate_chars;
use serde_json::{json, Value};
use serenity::model::application::{ActionRow, ActionRowComponent};
use switchboard_platform::{FieldValue, Form, Menu, PlatformError};

/// Callback type 9: open a modal.
pub(crate) const CALLBACK_MODAL: u8 = 9;
/// Component types: action row, string select, text input.
const ACTION_ROW: u8 = 1;
const STRING_SELECT: u8 = 3;
const TEXT_INPUT: u8 = 4;
/// Text input styles.
const SHORT: u8 = 1;
const PARAGRAPH: u8 = 2;
const MAX_TITLE: usize = 45;
const MAX_LABEL: usize = 45;
const MAX_CUSTOM_ID: usize = 100;
const MAX_OPTION_TEXT: usize = 100;
const MAX_PLACEHOLDER: usize = 150;

/// The type 9 callback opening `form`.
pub(crate) fn modal_callback(form: &Form) -> Result<Value, PlatformError> {
    if form.fields.is_empty() || form.fields.len() > Form::MAX_FIELDS {
        return Err(PlatformError::Rejected(format!(
            "a form has 1 to {} fields, not {}",
            Form::MAX_FIELDS,
            form.fields.len()
        )));
    }
    let mut rows = Vec::with_capacity(form.fields.len());
    for field in &form.fields {
        let id_len = field.id.chars().count();
        if id_len == 0 || id_len > MAX_CUSTOM_ID {
            return Err(PlatformError::Rejected(format!(
                "a form field id has 1 to {MAX_CUSTOM_ID} characters"
            )));
        }
        let len = field.value.chars().count();
        if len > Form::MAX_VALUE_CHARS {
            return Err(PlatformError::TooLong {
                len,
                max: Form::MAX_VALUE_CHARS,
            });
        }
        let mut input = json!({
            "type": TEXT_INPUT,
            "custom_id": field.id,
            "style": if field.multiline { PARAGRAPH } else { SHORT },
            "label": clipped(&field.label, MAX_LABEL, &field.id),
            "required": field.required,
            "max_length": Form::MAX_VALUE_CHARS,
        });
        if !field.value.is_empty() {
            input["value"] = json!(field.value);
        }
        rows.push(json!({ "type": ACTION_ROW, "components": [input] }));
    }
    Ok(json!({
        "type": CALLBACK_MODAL,
        "data": {
            "custom_id": form.action.as_str(),
            "title": clipped(&form.title, MAX_TITLE, "Edit"),
            "components": rows,
        },
    }))
}

/// The action row of `menu`: one string select, alone in its row.
pub(crate) fn menu_row(menu: &Menu) -> Result<Value, PlatformError> {
    if menu.options.is_empty() || menu.options.len() > Menu::MAX_OPTIONS {
        return Err(PlatformError::Rejected(format!(
            "a menu has 1 to {} options, not {}",
            Menu::MAX_OPTIONS,
            menu.options.len()
        )));
    }
    let mut options = Vec::with_capacity(menu.options.len());
    for option in &menu.options {
        let len = option.value.chars().count();
        if len == 0 || len > Menu::MAX_VALUE_CHARS {
            return Err(PlatformError::Rejected(format!(
                "a menu option's value has 1 to {} characters",
                Menu::MAX_VALUE_CHARS
            )));
        }
        let mut json = json!({
            "label": clipped(&option.label, MAX_OPTION_TEXT, &option.value),
            "value": option.value,
            "default": option.default,
        });
        if let Some(description) = option
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
        {
            json["description"] = json!(truncate_chars(description, MAX_OPTION_TEXT));
        }
        options.push(json);
    }
    let mut select = json!({
        "type": STRING_SELECT,
        "custom_id": menu.action.as_str(),
        "options": options,
        "min_values": 1,
        "max_values": 1,
    });
    if !menu.placeholder.trim().is_empty() {
        select["placeholder"] = json!(truncate_chars(&menu.placeholder, MAX_PLACEHOLDER));
    }
    Ok(json!({ "type": ACTION_ROW, "components": [select] }))
}

/// The text inputs of a modal submit, in order.
pub(crate) fn submitted(rows: &[ActionRow]) -> Vec<FieldValue> {
    rows.iter()
        .flat_map(|row| &row.components)
        .filter_map(|component| match component {
            ActionRowComponent::InputText(input) => Some(FieldValue {
                id: input.custom_id.clone(),
                value: input.value.clone().unwrap_or_default(),
            }),
            _ => None,
        })
        .collect()
}

/// `text` in at most `max` characters; `fallback` when it is blank (Discord
/// refuses an empty title or label).
fn clipped(text: &str, max: usize, fallback: &str) -> String {
    let text = if text.trim().is_empty() {
        fallback
    } else {
        text
    };
    truncate_chars(text, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::{ActionId, FormField, MenuOption};

    fn field(id: &str, value: &str) -> FormField {
        FormField {
            id: id.into(),
            label: format!("{id} label"),
            value: value.into(),
            multiline: false,
            required: true,
        }
    }

    fn action(id: &str) -> ActionId {
        ActionId::parse(id).unwrap_or_else(|| unreachable!())
    }

    #[test]
    fn a_modal_has_one_text_input_per_row_and_clipped_texts() {
        let form = Form {
            action: action("ap:0123:e"),
            title: "t".repeat(60),
            fields: vec![
                field("command", "ls"),
                FormField {
                    label: "l".repeat(80),
                    multiline: true,
                    required: false,
                    ..field("notes", "")
                },
            ],
        };
        let modal = modal_callback(&form).unwrap_or_default();
        assert_eq!(modal["type"], 9);
        assert_eq!(modal["data"]["custom_id"], "ap:0123:e");
        assert_eq!(
            modal["data"]["title"].as_str().map(|t| t.chars().count()),
            Some(45)
        );
        let rows = modal["data"]["components"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(rows.len(), 2);
        let first = &rows[0]["components"][0];
        assert_eq!(
            (first["type"].as_u64(), first["style"].as_u64()),
            (Some(4), Some(1))
        );
        assert_eq!(first["value"], "ls");
        let second = &rows[1]["components"][0];
        assert_eq!(second["style"], 2);
        assert_eq!(second["required"], false);
        assert!(second.get("value").is_none(), "an empty value is not sent");
        assert_eq!(
            second["label"].as_str().map(|l| l.chars().count()),
            Some(45)
        );
    }

    #[test]
    fn what_discord_refuses_is_refused_here() {
        let six = Form {
            action: action("f"),
            title: "x".into(),
            fields: (0..6).map(|i| field(&format!("f{i}"), "")).collect(),
        };
        assert!(modal_callback(&six).is_err());
        let long = Form {
            action: action("f"),
            title: "x".into(),
            fields: vec![field("a", &"v".repeat(4001))],
        };
        assert!(matches!(
            modal_callback(&long),
            Err(PlatformError::TooLong { .. })
        ));
        let options = |n: usize| -> Vec<MenuOption> {
            (0..n)
                .map(|i| MenuOption {
                    label: format!("option {i}"),
                    value: format!("v{i}"),
                    description: None,
                    default: i == 0,
                })
                .collect()
        };
        let menu = |n| Menu {
            action: action("m"),
            placeholder: "p".repeat(200),
            options: options(n),
        };
        assert!(menu_row(&menu(26)).is_err());
        assert!(menu_row(&menu(0)).is_err());
        let row = menu_row(&menu(25)).unwrap_or_default();
        let select = &row["components"][0];
        assert_eq!(select["type"], 3);
        assert_eq!(select["options"].as_array().map(Vec::len), Some(25));
        assert_eq!(select["options"][0]["default"], true);
        assert_eq!(
            select["placeholder"].as_str().map(|p| p.chars().count()),
            Some(150)
        );
    }
}
