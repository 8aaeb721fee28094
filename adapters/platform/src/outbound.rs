//! Outbound operations' payloads: messages with optional buttons, press answers.

use crate::form::{Form, Menu};
use crate::ids::{ActionId, MessageId};
use serde::{Deserialize, Serialize};

/// A message to send or the new content of an edited one. `text` is Markdown;
/// the adapter renders it to the platform's format (with a plain-text fallback).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutgoingMessage {
    pub text: String,
    /// Rows of buttons. Empty removes any keyboard when editing.
    pub buttons: Vec<Vec<Button>>,
    /// Reply to this message (Discord message reference, Telegram reply).
    pub reply_to: Option<MessageId>,
    /// A menu of options under the message, where the platform has menus
    /// ([`crate::Capabilities::menus`]); `None` removes one when editing.
    #[serde(default)]
    pub menu: Option<Menu>,
}

impl OutgoingMessage {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    pub fn with_buttons(mut self, rows: Vec<Vec<Button>>) -> Self {
        self.buttons = rows;
        self
    }

    pub fn replying_to(mut self, id: Option<MessageId>) -> Self {
        self.reply_to = id;
        self
    }

    pub fn with_menu(mut self, menu: Option<Menu>) -> Self {
        self.menu = menu;
        self
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ButtonStyle {
    Primary,
    Secondary,
    Success,
    Danger,
}

/// An inline button carrying an opaque action id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Button {
    pub label: String,
    pub action: ActionId,
    pub style: ButtonStyle,
    /// A one-key shortcut for text channels (the console's y/a/e/n).
    pub shortcut: Option<char>,
}

/// How to answer a button press.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PressAnswer {
    /// Acknowledge silently.
    Ack,
    /// Replace the message carrying the button, in the same response where the
    /// platform allows it (Discord interaction type 7).
    Update(OutgoingMessage),
    /// A notice shown only to the presser where the platform can (Telegram
    /// callback answer, Discord ephemeral message).
    Private(String),
    /// Opens a form for the presser (a Discord modal). Only a platform with
    /// [`crate::Capabilities::forms`] opens one, only for a press of a button
    /// and only as its first answer within the platform's deadline: otherwise
    /// [`crate::PlatformAdapter::answer_press`] returns
    /// [`crate::PlatformError::Unsupported`] and the press is still to be
    /// answered.
    Form(Form),
}

/// What the bot is doing in a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activity {
    /// A turn is running; adapters show a typing indicator.
    Typing,
    /// The turn is over and the bot waits for the user.
    Idle,
    /// The turn paused at an approval card it just showed: typing ends, and
    /// the card is what the user answers. A channel that paces its input by
    /// the bot's replies (the console) already took the card as its cue.
    Paused,
    /// A reply outside any turn (a command's answer, a notice) was sent. It
    /// ends nothing: another user's turn in the same chat keeps its typing
    /// indicator. A channel that paces its input by the bot's replies (the
    /// console) takes it like `Idle`.
    Answered,
}
