//! Delivery: a turn's events streamed into the chat (the draft and its
//! activity lines), the final answer chunked or sent as a file, and the
//! outcome recorded.

pub(super) mod activity;
pub(super) mod answer_file;
pub(super) mod model_error;
pub(super) mod native_draft;
pub(super) mod origin;
pub(super) mod outbound;
pub(crate) mod reactions;
pub(super) mod scrubbed;
pub(super) mod stream;
pub(super) mod voice;
