//! Inbound files: `getFile` resolves an attachment's `file_id` to a path,
//! then `GET {api}/file/bot<token>/<path>` is streamed into the caller's
//! writer, bounded in size and stall time. The token is part of that URL, so
//! no error raised here carries a URL: transport errors are stripped of it
//! and scrubbed of the token as well.

use crate::adapter::Inner;
use crate::errors::to_platform;
use std::time::Duration;
use switchboard_platform::{stream_to, Attachment, PlatformError, Secret};
use teloxide::prelude::Requester;
use teloxide::types::FileId;
use teloxide::{ApiError, RequestError};
use tokio::io::AsyncWrite;
use url::Url;

/// The Bot API serves bots files of at most 20 MB.
pub(crate) const MAX_DOWNLOAD_BYTES: u64 = 20 << 20;

/// The whole transfer may take this long (the bot client's own 17 s timeout
/// is for API calls); a transfer that stops is caught by the stall timeout.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);

impl Inner {
    /// Streams `attachment` (a `file_id` handle) into `dest`, at most
    /// `max_bytes` (and the Bot API's 20 MB). A size known to be over the
    /// limit — from the update or from `getFile` — is refused before any byte
    /// is fetched.
    pub async fn download(
        &self,
        attachment: &Attachment,
        dest: &mut (dyn AsyncWrite + Unpin + Send),
        max_bytes: u64,
    ) -> Result<u64, PlatformError> {
        let max = max_bytes.min(MAX_DOWNLOAD_BYTES);
        let token = &self.config.token;
        if let Some(size) = attachment.size.filter(|s| *s > max) {
            return Err(PlatformError::TooLarge { size, max });
        }
        let file = self
            .bot
            .get_file(FileId(attachment.handle.0.clone()))
            .await
            .map_err(|e| get_file_error(&e, token, attachment, max))?;
        // `u32::MAX` is teloxide's "size not given".
        let reported = (file.meta.size != u32::MAX).then_some(u64::from(file.meta.size));
        if let Some(size) = reported.filter(|s| *s > max) {
            return Err(PlatformError::TooLarge { size, max });
        }
        let url = file_url(self.bot.api_url(), token, &file.path)?;
        let network =
            |e: reqwest::Error| PlatformError::Network(token.scrub(&e.without_url().to_string()));
        let response = self
            .bot
            .client()
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
                "the file download answered HTTP {}",
                status.as_u16()
            )));
        }
        if let Some(size) = response.content_length().filter(|s| *s > max) {
            return Err(PlatformError::TooLarge { size, max });
        }
        stream_to(
            response.bytes_stream(),
            dest,
            max,
            self.config.download_stall,
            network,
        )
        .await
    }
}

/// `getFile` refusals: "file is too big" (over the Bot API's 20 MB) and an
/// unknown `file_id` have their own meaning; the rest is scrubbed as usual.
fn get_file_error(
    e: &RequestError,
    token: &Secret,
    attachment: &Attachment,
    max: u64,
) -> PlatformError {
    match e {
        RequestError::Api(ApiError::FileIdInvalid) => PlatformError::NotFound,
        RequestError::Api(ApiError::Unknown(text)) if text.contains("file is too big") => {
            PlatformError::TooLarge {
                // The Bot API does not say how big; over its limit, at least.
                size: attachment.size.unwrap_or(MAX_DOWNLOAD_BYTES + 1),
                max,
            }
        }
        RequestError::Api(ApiError::Unknown(text)) if text.contains("invalid file") => {
            PlatformError::NotFound
        }
        _ => to_platform(e, token),
    }
}

/// `{api}/file/bot<token>/<file_path>`, each path segment escaped.
fn file_url(mut api: Url, token: &Secret, path: &str) -> Result<Url, PlatformError> {
    {
        let mut segments = api
            .path_segments_mut()
            .map_err(|()| PlatformError::Rejected("the API URL cannot take a path".into()))?;
        segments.pop_if_empty();
        segments
            .push("file")
            .push(&format!("bot{}", token.expose()));
        for part in path.split('/').filter(|p| !p.is_empty() && *p != "..") {
            segments.push(part);
        }
    }
    Ok(api)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_url_follows_the_api_base_and_escapes_the_path() {
        let token = Secret::new("1:abc");
        let url = file_url(
            Url::parse("http://127.0.0.1:9/").unwrap(),
            &token,
            "photos/file_7.jpg",
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/file/bot1:abc/photos/file_7.jpg"
        );
        let url = file_url(Url::parse("https://h/tg").unwrap(), &token, "../x y").unwrap();
        assert_eq!(url.as_str(), "https://h/tg/file/bot1:abc/x%20y");
    }

    #[test]
    fn get_file_refusals_keep_their_meaning() {
        let token = Secret::new("1:SECRETSECRET");
        let mut a = Attachment::new(switchboard_platform::AttachmentKind::Document, "id");
        let too_big = RequestError::Api(ApiError::Unknown("Bad Request: file is too big".into()));
        assert!(matches!(
            get_file_error(&too_big, &token, &a, 10),
            PlatformError::TooLarge { size, max: 10 } if size > MAX_DOWNLOAD_BYTES
        ));
        a.size = Some(30 << 20);
        assert!(matches!(
            get_file_error(&too_big, &token, &a, 10),
            PlatformError::TooLarge { size, .. } if size == 30 << 20
        ));
        let unknown = RequestError::Api(ApiError::Unknown("Bad Request: invalid file_id".into()));
        assert!(matches!(
            get_file_error(&unknown, &token, &a, 10),
            PlatformError::NotFound
        ));
        let odd = RequestError::Api(ApiError::Unknown("at /bot1:SECRETSECRET/GetFile".into()));
        let text = get_file_error(&odd, &token, &a, 10).to_string();
        assert!(!text.contains("SECRETSECRET"), "{text}");
    }
}
