//! Forms and menus: a form opened in answer to a press (a Discord modal) and
//! a menu of options under a message (a Discord select menu). Offered only by
//! platforms that declare them ([`crate::Capabilities::forms`],
//! [`crate::Capabilities::menus`]); what a person sends back arrives as a
//! [`crate::ButtonPress`] carrying [`PressInput`].

use crate::ids::ActionId;
use serde::{Deserialize, Serialize};

/// A form of text fields, opened for the presser in answer to a press
/// ([`crate::PressAnswer::Form`]). What they send arrives as a press of
/// `action` with [`PressInput::Form`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Form {
    /// The action the submission arrives as.
    pub action: ActionId,
    /// Clipped by the adapter to what the platform shows.
    pub title: String,
    /// 1 to [`Form::MAX_FIELDS`] fields.
    pub fields: Vec<FormField>,
}

impl Form {
    /// The most fields a form holds (Discord: 5 rows of one text input).
    pub const MAX_FIELDS: usize = 5;
    /// The longest value a field is prefilled with or takes, in characters.
    pub const MAX_VALUE_CHARS: usize = 4000;
    /// The longest field id, in characters.
    pub const MAX_ID_CHARS: usize = 100;
}

/// One text field of a [`Form`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormField {
    /// Comes back with the value; unique in its form, at most
    /// [`Form::MAX_ID_CHARS`] characters.
    pub id: String,
    /// Clipped by the adapter to what the platform shows.
    pub label: String,
    /// What the field is prefilled with (at most [`Form::MAX_VALUE_CHARS`]).
    pub value: String,
    /// Several lines (a paragraph) rather than one.
    pub multiline: bool,
    /// The platform refuses to send the form with this field empty.
    pub required: bool,
}

/// A menu of options under a message; choosing one arrives as a press of
/// `action` with [`PressInput::Chosen`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Menu {
    pub action: ActionId,
    /// Shown while nothing is chosen; clipped by the adapter.
    pub placeholder: String,
    /// 1 to [`Menu::MAX_OPTIONS`] options.
    pub options: Vec<MenuOption>,
}

impl Menu {
    /// The most options a menu holds (Discord: 25).
    pub const MAX_OPTIONS: usize = 25;
    /// The longest option value, in characters (Discord: 100).
    pub const MAX_VALUE_CHARS: usize = 100;
}

/// One option of a [`Menu`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MenuOption {
    /// Clipped by the adapter to what the platform shows.
    pub label: String,
    /// Comes back when chosen; at most [`Menu::MAX_VALUE_CHARS`] characters.
    pub value: String,
    /// A line under the label; clipped by the adapter.
    pub description: Option<String>,
    /// Shown as chosen (the current setting).
    pub default: bool,
}

/// A field's value as the presser sent it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldValue {
    pub id: String,
    pub value: String,
}

/// What a press brought besides its action.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PressInput {
    /// A button: nothing.
    #[default]
    None,
    /// A menu: the values chosen.
    Chosen(Vec<String>),
    /// A form sent back: its fields, in order.
    Form(Vec<FieldValue>),
}

impl PressInput {
    /// The one value chosen in a menu.
    pub fn chosen(&self) -> Option<&str> {
        match self {
            PressInput::Chosen(values) => values.first().map(String::as_str),
            _ => None,
        }
    }

    /// The fields of a form sent back.
    pub fn form(&self) -> Option<&[FieldValue]> {
        match self {
            PressInput::Form(fields) => Some(fields),
            _ => None,
        }
    }
}
