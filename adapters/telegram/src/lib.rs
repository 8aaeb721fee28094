//! Telegram adapter for Switchboard: teloxide ↔ the platform contract.
//!
//! [`TelegramAdapter::connect`] checks the token, then
//! [`PlatformAdapter::run`](switchboard_platform::PlatformAdapter::run) long-polls
//! (offset persisted in the state directory) or serves the webhook. Outbound
//! calls go through one governor layer (per chat, per group, per bot) that
//! waits out 429s and resumes from the refused call; Markdown is rendered to
//! Telegram HTML with a plain-text fallback. Media: photos, voice notes,
//! audio, documents and videos become attachments (an album one message,
//! see `album.rs`), downloaded through `getFile` (`download.rs`); files go
//! out with `sendPhoto` / `sendDocument` (`upload.rs`).

mod activity;
mod adapter;
mod album;
mod bad_update;
mod commands;
mod config;
mod download;
mod drafts;
mod errors;
mod fit;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod get_updates;
mod normalize;
mod offset;
mod polling;
mod presses;
#[cfg(test)]
mod props;
mod raw_json;
mod reactions;
mod render;
mod retry;
mod send;
mod upload;
mod utf16;
mod voice;
mod webhook;
mod webhook_spool;

pub use adapter::TelegramAdapter;
pub use config::{
    TelegramConfig, TelegramConfigError, TelegramLimits, WebhookConfig, DEFAULT_API_URL,
    LIMIT_MARGIN,
};
pub use errors::TelegramError;
pub use reactions::{allowed_reaction, default_status_emoji, ALLOWED as ALLOWED_REACTIONS};
