//! `send_file`: hands a workspace file to the user in the chat the turn
//! serves — a photo for images, a document otherwise. Only files inside the
//! workspace (checked as `read_file` checks them), so no approval is needed.

use super::args::parse_args;
use super::fs_error::io_failure;
use super::fs_open::{open_checked, Access};
use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use super::Workspace;
use crate::domain::Conversation;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;
use switchboard_platform::{FileKind, OutgoingFile, Platform, PlatformAdapter};

/// Images up to this size go as photos (Telegram's photo limit); larger ones
/// as documents.
const MAX_PHOTO_BYTES: u64 = 10 << 20;
const MAX_CAPTION_CHARS: usize = 1_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    caption: Option<String>,
}

pub struct SendFileTool {
    spec: ToolSpec,
    ws: Arc<Workspace>,
    adapters: HashMap<Platform, Arc<dyn PlatformAdapter>>,
}

impl SendFileTool {
    pub fn new(ws: Arc<Workspace>, adapters: &[Arc<dyn PlatformAdapter>]) -> SendFileTool {
        SendFileTool {
            ws,
            adapters: adapters.iter().map(|a| (a.platform(), Arc::clone(a))).collect(),
            spec: ToolSpec {
                name: "send_file".into(),
                display_name: "Send file".into(),
                description: "Send a file from the workspace (in a chat user's turns, that user's own \
                              folder) to the user in this chat, with an optional caption: images (PNG, JPEG, GIF, WebP) arrive as photos, anything else as a \
                              document. Use it to hand back a chart, a report or a converted file you made."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "Path relative to the workspace root." },
                        "caption": { "type": "string", "description": "Short text shown with the file." }
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
                concurrency_safe: false,
                requires_approval: false,
                background: false,
                key_fields: Vec::new(),
            },
        }
    }
}

/// A checked workspace file read whole (within `max` bytes).
fn read_checked(ws: &Workspace, input: &str, max: u64) -> Result<(Vec<u8>, String), ToolError> {
    let path = ws.resolve(input)?;
    let shown = ws.display(&path);
    let (file, meta) = open_checked(ws, &path, &shown, Access::Read)?;
    if meta.len() > max {
        return Err(ToolError::failed(format!(
            "`{shown}` is {} bytes; this chat accepts files up to {max} bytes",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_failure(&shown, &e))?;
    if bytes.len() as u64 > max {
        return Err(ToolError::failed(format!(
            "`{shown}` grew past the size limit"
        )));
    }
    Ok((bytes, shown))
}

#[async_trait::async_trait]
impl Tool for SendFileTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        self.validate_for(args, None)
    }

    fn validate_for(&self, args: &Value, caller: Option<&Conversation>) -> Result<(), ToolError> {
        let a: Args = parse_args(&self.spec.name, args.clone())?;
        self.ws.view(caller)?.resolve(&a.path)?;
        Ok(())
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let a: Args = parse_args(&self.spec.name, args)?;
        let origin = ctx.origin.as_ref().ok_or_else(|| {
            ToolError::failed("there is no chat to send the file to (this is not a chat turn)")
        })?;
        let adapter = self
            .adapters
            .get(&origin.chat.platform)
            .ok_or_else(|| ToolError::failed("this chat's platform is not connected"))?;
        let max = adapter.upload_limit(origin.chat) as u64;
        let ws = self.ws.view(Some(origin))?;
        let path = a.path.clone();
        let (bytes, shown) = tokio::task::spawn_blocking(move || read_checked(&ws, &path, max))
            .await
            .map_err(|e| ToolError::failed(format!("reading stopped: {e}")))??;
        let is_image = matches!(
            crate::media::classify(&bytes[..bytes.len().min(8192)]),
            crate::media::Content::Image(_)
        );
        let kind = if is_image && bytes.len() as u64 <= MAX_PHOTO_BYTES {
            FileKind::Photo
        } else {
            FileKind::Document
        };
        // What the chat shows as the file's name: bidi, invisible and
        // control characters made visible, as on approval cards, so a name
        // cannot reorder itself (`report<U+202E>fdp.exe`) or hide a part.
        let shown_name = crate::visible::visible_name(shown.rsplit('/').next().unwrap_or("file"));
        let note = if shown_name.escaped > 0 {
            "; hidden or control characters in its name are shown as ⟨U+…⟩"
        } else {
            ""
        };
        let name = shown_name.text;
        let size = bytes.len();
        let mut file = OutgoingFile::document(origin.chat, name, bytes);
        file.kind = kind;
        if let Some(caption) = a.caption.filter(|c| !c.trim().is_empty()) {
            file = file.with_caption(crate::text::clip(&caption, MAX_CAPTION_CHARS));
        }
        adapter
            .send_file(file)
            .await
            .map_err(|e| ToolError::Failed {
                message: format!("the chat platform did not take `{shown}`: {e}"),
                diagnostics: None,
            })?;
        let how = if kind == FileKind::Photo {
            "photo"
        } else {
            "document"
        };
        Ok(format!(
            "sent `{shown}` ({size} bytes) to the chat as a {how}{note}"
        ))
    }
}
