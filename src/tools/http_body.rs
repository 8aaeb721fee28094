//! Reading an HTTP response for a tool: its content type and at most so many
//! bytes of body (the rest is not downloaded).

use reqwest::header::CONTENT_TYPE;

/// A response body read up to a cap.
pub(crate) struct CappedBody {
    pub content_type: String,
    pub bytes: Vec<u8>,
    /// More was on offer than the cap.
    pub cut: bool,
}

/// Reads `resp`'s body, stopping after `max_bytes`.
pub(crate) async fn read_capped(
    resp: &mut reqwest::Response,
    max_bytes: usize,
) -> Result<CappedBody, reqwest::Error> {
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut bytes = Vec::new();
    let mut cut = false;
    while let Some(chunk) = resp.chunk().await? {
        let room = max_bytes - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(CappedBody {
        content_type,
        bytes,
        cut,
    })
}
