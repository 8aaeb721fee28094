//! Files users attach, as Discord serves them: each attachment of a message
//! gets a signed CDN URL (`/attachments/{channel}/{attachment}/{filename}`
//! with `ex`, `is` and `hm` query parameters) on the fake's own server, and
//! the CDN route serves the registered bytes only for a correctly signed URL
//! (Discord answers an unsigned or expired one with 404).

use super::{FakeDiscord, Inner, Shared};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// A file a user attaches to a message.
#[derive(Debug, Clone)]
pub struct FakeFile {
    pub filename: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
    /// The size Discord reports; the bytes' length unless set (a huge file
    /// not held in memory).
    pub size: Option<u64>,
    /// A voice message recorded in the app: its length in seconds (Discord
    /// then adds a waveform and flags the message).
    pub voice_secs: Option<f64>,
    /// The CDN sends half of the bytes, then the connection breaks.
    pub breaks: bool,
}

impl FakeFile {
    pub fn new(filename: &str, content_type: &str, bytes: Vec<u8>) -> FakeFile {
        FakeFile {
            filename: filename.to_owned(),
            content_type: Some(content_type.to_owned()),
            bytes,
            size: None,
            voice_secs: None,
            breaks: false,
        }
    }

    /// A file whose transfer breaks off halfway.
    pub fn breaking(mut self) -> FakeFile {
        self.breaks = true;
        self
    }

    /// A voice message of `secs` seconds, as the app records it.
    pub fn voice(bytes: Vec<u8>, secs: f64) -> FakeFile {
        FakeFile {
            voice_secs: Some(secs),
            ..FakeFile::new("voice-message.ogg", "audio/ogg", bytes)
        }
    }

    /// A file Discord reports as `size` bytes, without holding them.
    pub fn of_size(filename: &str, content_type: &str, size: u64) -> FakeFile {
        FakeFile {
            size: Some(size),
            ..FakeFile::new(filename, content_type, Vec::new())
        }
    }

    fn size(&self) -> u64 {
        self.size.unwrap_or(self.bytes.len() as u64)
    }
}

/// A hosted attachment.
#[derive(Debug, Clone)]
pub(crate) struct CdnFile {
    pub channel: u64,
    pub attachment: u64,
    pub file: FakeFile,
}

fn signature(attachment: u64) -> String {
    format!("{:x}", attachment.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Hosts `file` as attachment `id` of a message in `channel`; returns its
/// JSON as a message carries it.
pub(crate) fn host(inner: &mut Inner, base: &str, channel: u64, file: FakeFile) -> Value {
    let id = inner.next_id();
    let url = format!(
        "{base}/attachments/{channel}/{id}/{}?ex=6790b3c0&is=678f6240&hm={}&",
        file.filename,
        signature(id)
    );
    let mut json = json!({
        "id": id.to_string(),
        "filename": file.filename,
        "size": file.size(),
        "url": url,
        "proxy_url": url.replace("/attachments/", "/media-proxy/"),
    });
    if let Some(ct) = &file.content_type {
        json["content_type"] = json!(ct);
    }
    if let Some(secs) = file.voice_secs {
        json["duration_secs"] = json!(secs);
        json["waveform"] = json!("AAAHBw8PDw8HBwAA");
    }
    inner.cdn.push(CdnFile {
        channel,
        attachment: id,
        file,
    });
    json
}

/// `GET /attachments/{channel}/{attachment}/{filename}?ex&is&hm`.
pub(crate) async fn serve(
    State(shared): State<Arc<Shared>>,
    Path((channel, attachment, filename)): Path<(u64, u64, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut inner = shared.lock();
    inner.cdn_hits.push(attachment);
    let signed = ["ex", "is"].iter().all(|k| query.contains_key(*k))
        && query.get("hm") == Some(&signature(attachment));
    let found = inner
        .cdn
        .iter()
        .find(|f| f.channel == channel && f.attachment == attachment && f.file.filename == filename)
        .filter(|_| signed)
        .map(|f| (f.file.bytes.clone(), f.file.breaks));
    drop(inner);
    match found {
        Some((bytes, false)) => (StatusCode::OK, bytes).into_response(),
        Some((bytes, true)) => {
            let half = bytes[..bytes.len() / 2].to_vec();
            let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut");
            let body = futures::stream::iter([Ok(half), Err(cut)]);
            axum::body::Body::from_stream(body).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            "This content is no longer available.",
        )
            .into_response(),
    }
}

impl FakeDiscord {
    /// Attachment ids whose CDN URL was fetched, in order.
    pub fn cdn_downloads(&self) -> Vec<u64> {
        self.shared.lock().cdn_hits.clone()
    }
}
