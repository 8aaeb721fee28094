//! Known secret values (tokens, keys, URL passwords) and scrubbing them out of
//! everything that leaves the process or is stored: tool results, traces,
//! history, chat messages and logs.
//!
//! The set is process-wide because the secrets are: every part of the process
//! can print them, and a child reading `/proc/$PPID/environ` used to find them
//! all. It only grows; registering a value twice is harmless.

mod collect;
mod digest;
mod log_writer;
mod scrubber;
mod seal;
mod stream;
mod url_redact;

pub use collect::{from_vars, is_secret_name, token_parts, url_secrets};
pub use digest::TokenDigest;
pub use log_writer::ScrubbingWriter;
pub use scrubber::{Scrubber, MIN_SECRET_LEN, REDACTED};
pub use seal::{seal_process, SealReport};
pub use stream::StreamScrubber;
pub(crate) use url_redact::is_secret_param;
pub use url_redact::shown_url;

use serde_json::Value;
use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock};

static KNOWN: RwLock<Option<Arc<Scrubber>>> = RwLock::new(None);

/// Adds `values` to the process's known secrets.
pub fn register<I, S>(values: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut known = KNOWN.write().unwrap_or_else(PoisonError::into_inner);
    let next = match known.as_ref() {
        Some(current) => current.with(values),
        None => Scrubber::new(values),
    };
    *known = Some(Arc::new(next));
}

/// The known secrets now.
pub fn current() -> Arc<Scrubber> {
    KNOWN
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_default()
}

/// `text` with every known secret replaced by [`REDACTED`].
pub fn scrub(text: &str) -> Cow<'_, str> {
    current().scrub(text)
}

/// [`scrub`] into an owned string, in place when nothing changes.
pub fn scrub_string(text: String) -> String {
    let scrubber = current();
    match scrubber.scrub(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(s) => s,
    }
}

/// Every string in `value` (keys included) scrubbed.
pub fn scrub_value(value: &Value) -> Value {
    let scrubber = current();
    scrub_value_with(&scrubber, value)
}

fn scrub_value_with(scrubber: &Scrubber, value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(scrubber.scrub(s).into_owned()),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| scrub_value_with(scrubber, v))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    (
                        scrubber.scrub(k).into_owned(),
                        scrub_value_with(scrubber, v),
                    )
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A scrubber for one stream of model deltas.
pub fn stream() -> StreamScrubber {
    StreamScrubber::new(current())
}
