//! Inbound files: the attachment's message is fetched again
//! (`GET /channels/{c}/messages/{m}`) for a fresh signed CDN URL — the one in
//! the original event expires — and that URL is streamed with
//! [`stream_to`], bounded in size and stall time. The URL never leaves this
//! module: errors carry neither it nor its signature.

use crate::rest::{decode, nz, Lane, Rest};
use serde::Deserialize;
use serenity::http::{LightMethod, Route};
use serenity::model::id::{ChannelId, MessageId};
use std::time::Duration;
use switchboard_platform::{stream_to, Attachment, PlatformError};
use tokio::io::AsyncWrite;

/// Discord's default limit on a message's files (servers without boosts),
/// which is also what a bot can be sent; a boosted server's own limit, as
/// its interactions report it, is the adapter's `download_limit` there.
pub(crate) const MAX_DOWNLOAD_BYTES: u64 = 10 << 20;

/// The whole transfer may take this long (the REST client's own timeout is
/// for API calls); a transfer that stops is caught by the stall timeout.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);

/// `channel/message/attachment`, as `normalize` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AttachmentRef {
    pub channel: u64,
    pub message: u64,
    pub attachment: u64,
}

impl AttachmentRef {
    pub fn parse(handle: &str) -> Option<AttachmentRef> {
        let mut ids = handle.split('/').map(|p| p.parse::<u64>().ok());
        let (channel, message, attachment) = (ids.next()??, ids.next()??, ids.next()??);
        if ids.next().is_some() {
            return None;
        }
        Some(AttachmentRef {
            channel,
            message,
            attachment,
        })
    }
}

/// The part of a message a download needs.
#[derive(Debug, Deserialize)]
struct Fetched {
    #[serde(default)]
    attachments: Vec<FetchedAttachment>,
}

#[derive(Debug, Deserialize)]
struct FetchedAttachment {
    id: serenity::model::id::AttachmentId,
    url: String,
    size: u64,
}

impl Rest {
    /// Streams the attachment `attachment` names into `dest`, at most `max`
    /// bytes; a size known to be over it is refused before the transfer.
    pub async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn AsyncWrite + Unpin + Send),
        max: u64,
        stall: Duration,
    ) -> Result<u64, PlatformError> {
        let at = AttachmentRef::parse(&attachment.handle.0)
            .ok_or_else(|| PlatformError::Rejected("not a Discord attachment".into()))?;
        if let Some(size) = attachment.size.filter(|s| *s > max) {
            return Err(PlatformError::TooLarge { size, max });
        }
        let route = Route::ChannelMessage {
            channel_id: ChannelId::from(nz(at.channel)?),
            message_id: MessageId::from(nz(at.message)?),
        };
        let fetched: Fetched = self
            .call(Lane::Downloads, LightMethod::Get, route, None)
            .await
            .and_then(decode)?;
        let found = fetched
            .attachments
            .into_iter()
            .find(|a| a.id.get() == at.attachment)
            .ok_or(PlatformError::NotFound)?;
        if found.size > max {
            return Err(PlatformError::TooLarge {
                size: found.size,
                max,
            });
        }
        let url = reqwest::Url::parse(&found.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "https" | "http"))
            .ok_or_else(|| PlatformError::Rejected("Discord gave an unusable file URL".into()))?;
        let network = |e: reqwest::Error| PlatformError::Network(e.without_url().to_string());
        let response = self
            .http_client()
            .get(url)
            .timeout(TRANSFER_TIMEOUT)
            .send()
            .await
            .map_err(network)?;
        let status = response.status();
        if status.as_u16() == 404 {
            return Err(PlatformError::NotFound);
        }
        if !status.is_success() {
            return Err(PlatformError::Rejected(format!(
                "the attachment download answered HTTP {}",
                status.as_u16()
            )));
        }
        if let Some(size) = response.content_length().filter(|s| *s > max) {
            return Err(PlatformError::TooLarge { size, max });
        }
        stream_to(response.bytes_stream(), dest, max, stall, network).await
    }
}

#[cfg(test)]
mod tests {
    use super::AttachmentRef;

    #[test]
    fn handles_parse_strictly() {
        assert_eq!(
            AttachmentRef::parse("1/2/3"),
            Some(AttachmentRef {
                channel: 1,
                message: 2,
                attachment: 3
            })
        );
        for bad in ["", "1/2", "1/2/3/4", "a/2/3", "1//3", "-1/2/3"] {
            assert_eq!(AttachmentRef::parse(bad), None, "{bad}");
        }
    }
}
