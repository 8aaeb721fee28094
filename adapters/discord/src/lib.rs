//! Discord adapter for Switchboard: serenity's gateway and our paced REST
//! client behind the platform contract ([`switchboard_platform::PlatformAdapter`]).
//!
//! - Inbound: guild messages, thread messages and DMs become
//!   [`switchboard_platform::InboundMessage`]s (mentions of the bot or of its own
//!   role stripped, addressing decided: DM, mention, reply to the bot, free
//!   channel, or not addressed); button interactions become
//!   [`switchboard_platform::ButtonPress`]es. A thread is its own
//!   chat: `ChatAddress.chat` is the thread's channel id (`thread` is `None`), so
//!   answers stay in the thread. Outbound, a `ChatAddress` with `thread` set posts to
//!   that thread.
//! - Outbound: Markdown as is (≤ 2000 chars, the core chunks), buttons as action
//!   rows of ≤ 5 with `custom_id` = action id, replies as message references,
//!   typing renewed until `Idle`, press answers as interaction callbacks (7 / 4 +
//!   ephemeral / 6 / 9 for a form), deferred by the adapter when the core takes
//!   longer than 2.5 s after Discord created the interaction. Menus are string
//!   selects under a message, forms are modals (`forms.rs`); a choice and a
//!   modal submit arrive as presses carrying their values.
//! - Media: message attachments become the contract's attachments; a
//!   download fetches the message again for a fresh signed URL
//!   (`download.rs`); files go out as multipart messages (`upload.rs`).
//! - A new gateway session (one Discord could not resume) is followed by a
//!   backfill: the channels active in the last day are read over REST after
//!   the last message seen, and what was missed goes the way of a gateway
//!   message, once (`backfill.rs`). The newest delivered message per channel
//!   is also kept in `DATA_DIR` (`marks.rs`), so the first sessions after a
//!   restart fetch what was posted while no process ran.
//! - Every REST call goes through [`switchboard_platform::Pacer`]: 5 messages / 5 s
//!   per channel, 50 requests/s per bot, 429s honoured (`global` pauses everything).

mod adapter;
mod backfill;
mod config;
mod download;
mod errors;
mod forms;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod gateway;
mod interactions;
mod invite;
mod lookups;
mod marks;
mod normalize;
mod order;
#[cfg(test)]
mod props;
mod pump;
mod reactions;
mod recent;
mod render;
mod rest;
mod rest_lookups;
mod seen;
mod slash;
mod typing;
mod upload;
mod upload_limits;
mod voice;
mod watch;

pub use adapter::DiscordAdapter;
pub use config::{DiscordConfig, DiscordConfigError, DiscordTimings, RATE_MARGIN};
pub use errors::DiscordError;
pub use invite::invite_url;
