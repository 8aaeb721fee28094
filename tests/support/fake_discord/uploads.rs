//! Messages with files, as Discord takes them: `multipart/form-data` (parsed
//! strictly) with a `payload_json` part and `files[n]` parts, each named by
//! an `attachments` entry's `id`, at most the guild's upload limit in all
//! (413 beyond): 10 MiB, or what a test boosted the guild to.

use super::rest::{error, Answer};
use super::Inner;
use crate::support::multipart;
use serde_json::{json, Value};

/// Discord's default upload limit for a message's files.
pub const MAX_UPLOAD_BYTES: usize = 10 << 20;
/// The limit of a server at the highest boost level.
pub const MAX_BOOSTED_UPLOAD_BYTES: usize = 100 << 20;

impl Inner {
    /// The upload limit of `channel`'s guild (DMs: the default), as
    /// interactions report it in `attachment_size_limit`.
    pub fn upload_limit(&self, channel: u64) -> usize {
        self.channels
            .get(&channel)
            .and_then(|c| c.guild)
            .and_then(|g| self.upload_limits.get(&g))
            .map_or(MAX_UPLOAD_BYTES, |(_, bytes)| *bytes)
    }
}

impl super::FakeDiscord {
    /// Boosts `guild` to `level` (its `premium_tier`): its messages take
    /// files up to 50 MiB at level 2 and 100 MiB at level 3 (levels 0 and 1
    /// keep the default), and its interactions say so.
    pub fn boost(&self, guild: u64, level: u8) {
        let bytes = match level {
            0 | 1 => MAX_UPLOAD_BYTES,
            2 => 50 << 20,
            3 => MAX_BOOSTED_UPLOAD_BYTES,
            _ => panic!("Discord has boost levels 0 to 3"),
        };
        self.shared
            .lock()
            .upload_limits
            .insert(guild, (level, bytes));
    }
}

/// A file the bot attached to a message.
#[derive(Debug, Clone)]
pub struct Upload {
    pub channel: u64,
    pub message: u64,
    pub filename: String,
    pub bytes: Vec<u8>,
}

impl Upload {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// A multipart message body: its JSON payload (with `attachments` as Discord
/// describes them) and the files by id.
pub(crate) struct Form {
    pub payload: Value,
    pub files: Vec<(u64, String, Vec<u8>)>,
}

pub(crate) fn is_multipart(content_type: &str) -> bool {
    content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("multipart/")
}

fn invalid(message: &str) -> Answer {
    (
        400,
        json!({ "message": "Invalid Form Body", "code": 50035,
                "errors": { "_errors": [{ "code": "INVALID_FORM", "message": message }] } }),
        Vec::new(),
    )
}

/// Reads a multipart message body whose files may total `limit` bytes.
pub(crate) fn read(content_type: &str, body: &[u8], limit: usize) -> Result<Form, Answer> {
    if body.len() > limit + (1 << 20) {
        return Err(error(413, 40005, "Request entity too large"));
    }
    let parts = multipart::parse(content_type, body).map_err(|e| invalid(&e))?;
    let payload = parts
        .iter()
        .find(|p| p.name == "payload_json" && p.filename.is_none())
        .ok_or_else(|| invalid("payload_json is required with files"))?;
    let mut payload: Value = serde_json::from_slice(&payload.data)
        .map_err(|_| error(400, 50109, "The request body contains invalid JSON."))?;
    let mut files = Vec::new();
    for p in parts.iter().filter(|p| p.name != "payload_json") {
        let id = p
            .name
            .strip_prefix("files[")
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| invalid(&format!("unexpected form field {}", p.name)))?;
        let name = p
            .filename
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| invalid("a file part without a filename"))?;
        files.push((id, name, p.data.clone()));
    }
    if files.is_empty() {
        return Err(invalid("a multipart message without files"));
    }
    if files.iter().map(|f| f.2.len()).sum::<usize>() > limit {
        return Err(error(413, 40005, "Request entity too large"));
    }
    if super::voice::is_voice(&payload) {
        let typed: Vec<_> = parts
            .iter()
            .filter(|p| p.name != "payload_json")
            .map(|p| {
                (
                    0,
                    p.filename.clone().unwrap_or_default(),
                    p.content_type.clone(),
                )
            })
            .collect();
        super::voice::check(&payload, &typed)?;
    }
    let declared = payload["attachments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for a in &declared {
        let id = a["id"]
            .as_u64()
            .or_else(|| a["id"].as_str().and_then(|s| s.parse().ok()));
        if !id.is_some_and(|id| files.iter().any(|f| f.0 == id)) {
            return Err(invalid("an attachment names no uploaded file"));
        }
    }
    payload["attachments"] = Value::Array(
        files
            .iter()
            .map(|(id, name, bytes)| json!({ "id": id.to_string(), "filename": name, "size": bytes.len() }))
            .collect(),
    );
    Ok(Form { payload, files })
}

/// Keeps the files of the created message `answer` and lists them on it.
pub(crate) fn record(
    inner: &mut Inner,
    channel: u64,
    answer: &Value,
    files: Vec<(u64, String, Vec<u8>)>,
) {
    let Some(message) = answer["id"].as_str().and_then(|s| s.parse::<u64>().ok()) else {
        return;
    };
    let listed: Vec<Value> = files
        .iter()
        .map(|(id, name, bytes)| json!({ "id": id.to_string(), "filename": name, "size": bytes.len() }))
        .collect();
    if let Some(msg) = inner.messages.get_mut(&message) {
        msg["attachments"] = Value::Array(listed);
    }
    for (_, filename, bytes) in files {
        inner.uploads.push(Upload {
            channel,
            message,
            filename,
            bytes,
        });
    }
}
