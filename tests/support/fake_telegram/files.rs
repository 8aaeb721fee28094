//! Files the fake serves to the bot, as the Bot API does: `getFile` answers a
//! `file_path` for a known `file_id` (and refuses files over 20 MB with
//! "Bad Request: file is too big", before any download), and
//! `GET /file/bot<token>/<file_path>` serves the bytes a test hosted — or
//! sends a few and then hangs, to exercise stall timeouts.

use super::api::{bad, ApiError};
use super::{FakeTelegram, Inner, Shared};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{json, Value};
use std::sync::Arc;

/// The Bot API serves bots files of at most 20 MB.
pub const MAX_DOWNLOAD_BYTES: u64 = 20 << 20;

/// A file the fake holds for `getFile` and the download route.
#[derive(Debug, Clone)]
pub(super) struct HostedFile {
    pub file_id: String,
    pub path: String,
    /// What `getFile` reports (the bytes may be absent for huge files).
    pub size: u64,
    pub bytes: Arc<Vec<u8>>,
    pub serve: Serve,
}

/// How the download route sends a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Serve {
    Whole,
    /// The first half, then nothing more.
    Stall,
    /// The first half, then the connection breaks.
    Break,
}

pub(super) fn get_file(inner: &Inner, p: &Value) -> Result<Value, ApiError> {
    let id = p["file_id"].as_str().unwrap_or_default();
    let file = inner
        .files
        .iter()
        .find(|f| f.file_id == id)
        .ok_or_else(|| bad("invalid file_id"))?;
    if file.size > MAX_DOWNLOAD_BYTES {
        return Err(bad("file is too big"));
    }
    Ok(json!({
        "file_id": file.file_id,
        "file_unique_id": format!("u{}", file.file_id),
        "file_size": file.size,
        "file_path": file.path,
    }))
}

/// `GET /file/bot<token>/<file_path>`.
pub(super) async fn serve(
    State(shared): State<Arc<Shared>>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    let mut inner = shared.lock();
    if bot.strip_prefix("bot") != Some(inner.token.as_str()) {
        return (StatusCode::UNAUTHORIZED, "Unauthorized").into_response();
    }
    inner.file_hits.push(path.clone());
    let Some(file) = inner.files.iter().find(|f| f.path == path).cloned() else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    drop(inner);
    let half = file.bytes[..file.bytes.len() / 2].to_vec();
    let first = futures::stream::iter([Ok::<_, std::io::Error>(half)]);
    match file.serve {
        Serve::Whole => (StatusCode::OK, file.bytes.as_ref().clone()).into_response(),
        Serve::Stall => Body::from_stream(first.chain(futures::stream::pending())).into_response(),
        Serve::Break => {
            let broken = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut");
            Body::from_stream(first.chain(futures::stream::iter([Err(broken)]))).into_response()
        }
    }
}

impl FakeTelegram {
    /// Hosts `bytes` under a new `file_id` (returned), as if a user had sent
    /// them; `getFile` reports their size.
    pub fn host_file(&self, bytes: Vec<u8>) -> String {
        self.host(bytes.len() as u64, bytes, Serve::Whole)
    }

    /// A file `getFile` reports as `size` bytes without holding them (a huge
    /// upload); over 20 MB it is refused as too big.
    pub fn host_file_of_size(&self, size: u64) -> String {
        self.host(size, Vec::new(), Serve::Whole)
    }

    /// A file whose download sends half of `bytes` and then hangs.
    pub fn host_stalling_file(&self, bytes: Vec<u8>) -> String {
        self.host(bytes.len() as u64, bytes, Serve::Stall)
    }

    /// A file whose download breaks off after half of `bytes`.
    pub fn host_breaking_file(&self, bytes: Vec<u8>) -> String {
        self.host(bytes.len() as u64, bytes, Serve::Break)
    }

    fn host(&self, size: u64, bytes: Vec<u8>, serve: Serve) -> String {
        let mut inner = self.shared.lock();
        let n = inner.files.len() + 1;
        let file = HostedFile {
            file_id: format!("BQACAgIAAxkBAAI{n:04}"),
            path: format!("documents/file_{n}.bin"),
            size,
            bytes: Arc::new(bytes),
            serve,
        };
        let id = file.file_id.clone();
        inner.files.push(file);
        id
    }

    /// The `file_path`s the download route was asked for, in order.
    pub fn file_downloads(&self) -> Vec<String> {
        self.shared.lock().file_hits.clone()
    }
}
