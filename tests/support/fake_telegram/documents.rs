//! `sendDocument` and `sendPhoto` as the Bot API takes an upload: a
//! `multipart/form-data` body (parsed strictly) with `chat_id` and a
//! `document` / `photo` file part (or `document=attach://<part>` naming the
//! file part), an optional `caption` (at most 1,024 characters) and
//! `message_thread_id`. A document is at most 50 MB (413 beyond), a photo
//! 10 MB (400 `PHOTO_INVALID_DIMENSIONS`, as the Bot API answers). Either is
//! a message in the chat; its bytes, thread and caption are kept.
//! `sendVoice` takes a `voice` part that must be an Ogg Opus file (what
//! Telegram plays as a voice note; see `voice`) and an optional `duration`.

use super::api::{bad, chat_id, flood_check, not_migrated, ApiError};
use super::{next_message_id, now_secs, Inner, StoredMessage};
use crate::support::multipart::{self, Part};
use serde_json::{json, Value};
use tokio::time::Instant;

/// The Bot API's limit on a file a bot uploads.
pub const MAX_DOCUMENT_BYTES: usize = 50 << 20;
/// The Bot API's limit on a photo a bot uploads.
pub const MAX_PHOTO_BYTES: usize = 10 << 20;

/// Which upload method: the name of its file field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileField {
    Document,
    Photo,
    Voice,
}

impl FileField {
    pub fn of_method(method: &str) -> Option<FileField> {
        match method.to_ascii_lowercase().as_str() {
            "senddocument" => Some(FileField::Document),
            "sendphoto" => Some(FileField::Photo),
            "sendvoice" => Some(FileField::Voice),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            FileField::Document => "document",
            FileField::Photo => "photo",
            FileField::Voice => "voice",
        }
    }
}
const MAX_CAPTION_CHARS: usize = 1024;

/// A document or photo the bot sent.
#[derive(Debug, Clone)]
pub struct StoredDocument {
    pub kind: FileField,
    pub chat_id: i64,
    pub message_id: i64,
    pub thread_id: Option<i64>,
    pub file_name: String,
    pub caption: Option<String>,
    pub bytes: Vec<u8>,
}

impl StoredDocument {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// The request's fields for the call log: text fields as sent, the file as
/// its name and size (never megabytes of bytes).
pub fn params(content_type: &str, body: &[u8]) -> Value {
    let Ok(parts) = multipart::parse(content_type, body) else {
        return json!({ "malformed": true });
    };
    let mut fields = serde_json::Map::new();
    for p in parts {
        let value = match &p.filename {
            Some(name) => json!({ "file_name": name, "size": p.data.len() }),
            None => json!(p.text().unwrap_or_default()),
        };
        fields.insert(p.name, value);
    }
    Value::Object(fields)
}

pub fn send_file(
    inner: &mut Inner,
    kind: FileField,
    content_type: &str,
    body: &[u8],
    arrived: Instant,
) -> Result<Value, ApiError> {
    if body.len() > MAX_DOCUMENT_BYTES + 64 * 1024 {
        return Err(ApiError {
            code: 413,
            ..bad("Request Entity Too Large")
        });
    }
    let parts = multipart::parse(content_type, body)
        .map_err(|e| bad(format!("bad multipart request: {e}")))?;
    let field = |name: &str| {
        parts
            .iter()
            .find(|p| p.name == name && p.filename.is_none())
    };
    let text_field = |name: &str| field(name).and_then(Part::text).map(str::to_owned);
    let chat =
        chat_id(&json!({ "chat_id": text_field("chat_id").and_then(|c| c.parse::<i64>().ok()) }))?;
    not_migrated(inner, chat)?;
    let Some(known) = inner.chats.get(&chat) else {
        return Err(bad("chat not found"));
    };
    let chat_json = known.json.clone();
    let thread = match text_field("message_thread_id") {
        None => None,
        Some(t) => Some(
            t.parse::<i64>()
                .map_err(|_| bad("message thread not found"))?,
        ),
    };
    if let Some(t) = thread {
        if known.json["is_forum"] == json!(true) && !known.threads.contains(&t) {
            return Err(bad("message thread not found"));
        }
    }
    let missing = || bad(format!("there is no {} in the request", kind.name()));
    let field_part = parts
        .iter()
        .find(|p| p.name == kind.name())
        .ok_or_else(missing)?;
    // The file travels in the `document` part itself, or in another part the
    // field names as `attach://<part>` (what teloxide sends).
    let document = match field_part.filename {
        Some(_) => field_part,
        None => match field_part.text().and_then(|t| t.strip_prefix("attach://")) {
            Some(name) => parts
                .iter()
                .find(|p| p.name == name && p.filename.is_some())
                .ok_or_else(missing)?,
            None => field_part,
        },
    };
    let Some(file_name) = document.filename.clone().filter(|n| !n.is_empty()) else {
        // A text field named `document` is a file_id or URL; we issued none.
        return Err(bad("wrong remote file identifier specified"));
    };
    if document.data.is_empty() {
        return Err(bad("file must be non-empty"));
    }
    if document.data.len() > MAX_DOCUMENT_BYTES {
        return Err(ApiError {
            code: 413,
            ..bad("Request Entity Too Large")
        });
    }
    if kind == FileField::Photo && document.data.len() > MAX_PHOTO_BYTES {
        return Err(bad("PHOTO_INVALID_DIMENSIONS"));
    }
    let duration = match kind {
        FileField::Voice => super::voice::check(&document.data, text_field("duration").as_deref())?,
        _ => 0,
    };
    let caption = text_field("caption");
    if caption
        .as_deref()
        .is_some_and(|c| c.chars().count() > MAX_CAPTION_CHARS)
    {
        return Err(bad("message caption is too long"));
    }
    flood_check(inner, chat, arrived)?;
    let message_id = next_message_id(inner, chat);
    let date = now_secs();
    inner.messages.insert(
        (chat, message_id),
        StoredMessage {
            chat_id: chat,
            message_id,
            thread_id: thread,
            from_bot: true,
            from_id: super::BOT_ID,
            text: caption.clone().unwrap_or_default(),
            entities: Vec::new(),
            parse_mode: None,
            reply_markup: None,
            reply_to: None,
            edits: 0,
            date,
        },
    );
    let size = document.data.len();
    inner.documents.push(StoredDocument {
        kind,
        chat_id: chat,
        message_id,
        thread_id: thread,
        file_name: file_name.clone(),
        caption: caption.clone(),
        bytes: document.data.clone(),
    });
    let mut out = json!({
        "message_id": message_id,
        "date": date,
        "chat": chat_json,
        "from": {"id": super::BOT_ID, "is_bot": true, "first_name": "Switchboard",
                 "username": super::BOT_USERNAME},
    });
    let file_id = format!("{}-{chat}-{message_id}", kind.name());
    let unique = format!("u{chat}{message_id}");
    out[kind.name()] = match kind {
        FileField::Document => json!({"file_id": file_id, "file_unique_id": unique,
            "file_name": file_name, "file_size": size}),
        FileField::Photo => json!([{"file_id": file_id, "file_unique_id": unique,
            "width": 320, "height": 240, "file_size": size}]),
        FileField::Voice => json!({"file_id": file_id, "file_unique_id": unique,
            "duration": duration, "mime_type": "audio/ogg", "file_size": size}),
    };
    if let Some(c) = caption {
        out["caption"] = json!(c);
    }
    if let Some(t) = thread {
        out["message_thread_id"] = json!(t);
        out["is_topic_message"] = json!(true);
    }
    Ok(out)
}
