//! Inbound media: what an attachment is, and the bounded, streamed download
//! every adapter uses to hand one to the core.
//!
//! The core sees an attachment's kind, type, size and name, and an opaque
//! [`AttachmentHandle`] only the adapter that made it can resolve: never a
//! platform URL or a token.

use crate::adapter::PlatformError;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// What an attachment is, as the platform labelled it (the core checks the
/// bytes before trusting it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    Image,
    /// A music or audio file.
    Audio,
    /// A voice note recorded in the app (Telegram: OGG/Opus).
    Voice,
    Video,
    /// Any other file.
    Document,
}

impl AttachmentKind {
    /// The word shown to people and the model: `image`, `voice note`, …
    pub fn label(self) -> &'static str {
        match self {
            AttachmentKind::Image => "image",
            AttachmentKind::Audio => "audio file",
            AttachmentKind::Voice => "voice note",
            AttachmentKind::Video => "video",
            AttachmentKind::Document => "file",
        }
    }
}

/// Whatever the adapter needs to fetch the file again (a Telegram `file_id`,
/// a Discord channel/message/attachment id triple, a local path for the
/// console). Opaque to the core; kept in the inbox so a restart can still
/// download it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentHandle(pub String);

/// Handles are left out of logs: they are the adapter's business.
impl std::fmt::Debug for AttachmentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AttachmentHandle(…)")
    }
}

/// A file that came with a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub kind: AttachmentKind,
    /// The MIME type the platform reported, if any (not trusted by the core).
    #[serde(default)]
    pub mime: Option<String>,
    /// Size in bytes as the platform reported it, if it did.
    #[serde(default)]
    pub size: Option<u64>,
    /// The file name the sender gave, if any.
    #[serde(default)]
    pub name: Option<String>,
    /// Length of a voice note, audio file or video, when the platform says.
    #[serde(default)]
    pub duration_secs: Option<u32>,
    pub handle: AttachmentHandle,
}

impl Attachment {
    /// An attachment of `kind` with nothing known but its handle.
    pub fn new(kind: AttachmentKind, handle: impl Into<String>) -> Attachment {
        Attachment {
            kind,
            mime: None,
            size: None,
            name: None,
            duration_secs: None,
            handle: AttachmentHandle(handle.into()),
        }
    }
}

/// How long a download may go without receiving a byte before it is given up.
pub const DOWNLOAD_STALL: Duration = Duration::from_secs(30);

/// Copies a response body into `dest`, refusing more than `max` bytes (the
/// body is cut off at once, not read to the end) and giving up when no chunk
/// arrives for `stall`. `network` turns a transport error into the adapter's
/// error, scrubbed of URLs and tokens. Returns the number of bytes written.
pub async fn stream_to<S, T, E>(
    body: S,
    dest: &mut (dyn AsyncWrite + Unpin + Send),
    max: u64,
    stall: Duration,
    network: impl Fn(E) -> PlatformError,
) -> Result<u64, PlatformError>
where
    S: Stream<Item = Result<T, E>>,
    T: AsRef<[u8]>,
{
    let mut body = std::pin::pin!(body);
    let mut written: u64 = 0;
    loop {
        let next = tokio::time::timeout(stall, body.next())
            .await
            .map_err(|_| PlatformError::Stalled)?;
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(&network)?;
        let chunk = chunk.as_ref();
        written += chunk.len() as u64;
        if written > max {
            return Err(PlatformError::TooLarge { size: written, max });
        }
        dest.write_all(chunk)
            .await
            .map_err(PlatformError::Storage)?;
    }
    dest.flush().await.map_err(PlatformError::Storage)?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunks: &[&'static [u8]]) -> impl Stream<Item = Result<&'static [u8], String>> {
        futures::stream::iter(chunks.iter().map(|c| Ok(*c)).collect::<Vec<_>>())
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_written_whole() {
        let mut out = Vec::new();
        let n = stream_to(
            body(&[b"abc", b"de"]),
            &mut out,
            5,
            DOWNLOAD_STALL,
            PlatformError::Network,
        )
        .await
        .unwrap();
        assert_eq!((n, out.as_slice()), (5, b"abcde".as_slice()));
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_as_soon_as_it_passes_it() {
        let mut out = Vec::new();
        let err = stream_to(
            body(&[b"abc", b"def", b"never"]),
            &mut out,
            5,
            DOWNLOAD_STALL,
            PlatformError::Network,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, PlatformError::TooLarge { size: 6, max: 5 }),
            "{err:?}"
        );
        assert_eq!(out, b"abc", "nothing past the limit is written");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_sending_is_given_up() {
        let stalled =
            futures::stream::iter([Ok::<_, String>(&b"abc"[..])]).chain(futures::stream::pending());
        let mut out = Vec::new();
        let err = stream_to(
            stalled,
            &mut out,
            100,
            DOWNLOAD_STALL,
            PlatformError::Network,
        )
        .await
        .unwrap_err();
        assert!(matches!(err, PlatformError::Stalled), "{err:?}");
    }
}
