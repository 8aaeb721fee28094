//! The Telegram and Discord adapters against the fake Telegram Bot API and Discord (REST and gateway).
//!
//! One test binary for the area; each module was a test binary of its own.
//!
//! `telegram_updates` installs this process's tracing subscriber (it captures
//! everything logged, to check what reached the logs). Nothing else here may
//! install one: `support::e2e::Harness` does, so its users live in other binaries.

#[path = "../support/mod.rs"]
mod support;

mod activity_lines;
mod discord_adapter;
mod discord_chats;
mod discord_e2e;
mod discord_forms;
mod discord_interactions;
mod discord_limits;
mod discord_media;
mod discord_profile_card;
mod discord_reactions;
mod discord_resilience;
mod telegram_adapter;
mod telegram_albums;
mod telegram_draft_limits;
mod telegram_drafts;
mod telegram_e2e;
mod telegram_limits;
mod telegram_link;
mod telegram_media;
mod telegram_reactions;
mod telegram_resilience;
mod telegram_updates;
mod typing_pace;
mod voice_fakes;
mod voice_replies;
