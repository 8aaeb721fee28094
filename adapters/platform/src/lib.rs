//! The platform-neutral contract between Switchboard's agent core and its chat adapters.
//!
//! An adapter turns platform events into [`Inbound`] events and carries out the
//! outbound operations of [`PlatformAdapter`]. The core never sees an SDK type, and
//! an adapter never touches the database: everything it needs travels through here.

mod adapter;
mod chunk;
#[cfg(test)]
mod chunk_props;
pub mod failpoint;
mod file;
mod form;
mod ids;
mod inbound;
mod intake;
mod link;
mod media;
mod outbound;
mod pacing;
mod secret;
mod status;
mod voice;
mod waits;

pub use adapter::{
    Capabilities, CommandInfo, Drafts, GaveWay, LengthUnit, PlatformAdapter, PlatformError,
};
pub use chunk::{chunk_markdown, measure};
pub use file::{FileKind, OutgoingFile};
pub use form::{FieldValue, Form, FormField, Menu, MenuOption, PressInput};
/// Re-exported so adapters build quotas without naming governor themselves.
pub use governor::Quota;
pub use ids::{
    ActionId, ChatAddress, ChatId, ChatKind, DraftId, MessageId, MessageRef, Platform, ThreadId,
    UserId,
};
pub use inbound::{Addressed, ButtonPress, Inbound, InboundMessage, PressHandle, User};
pub use intake::{Ack, Delivery, InboundQueue, InboundSink, IntakeError, Pending, Receipt};
pub use link::{Link, LinkState, LinkStatus};
pub use media::{stream_to, Attachment, AttachmentHandle, AttachmentKind, DOWNLOAD_STALL};
pub use outbound::{Activity, Button, ButtonStyle, OutgoingMessage, PressAnswer};
pub use pacing::{Pacer, Retry, TokioClock};
pub use secret::Secret;
pub use status::{Reaction, Status, StatusConfigError, StatusEmoji};
pub use voice::{ogg_crc, OggOpus, OutgoingVoice, VoiceError, MAX_WAVEFORM_POINTS};
pub use waits::{WaitHistogram, WaitSnapshot};
