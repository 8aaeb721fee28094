//! Files: `sendDocument` / `sendPhoto` (multipart) paced like every other send.
//! A photo over the Bot API's 10 MB photo limit goes out as a document (the
//! user still gets the file, shown as a download instead of inline).

use crate::errors::{classify, to_platform};
use crate::send::{tg_message_id, Outbound};
use switchboard_platform::{FileKind, MessageId, MessageRef, OutgoingFile, PlatformError};
use teloxide::payloads::{SendDocumentSetters, SendPhotoSetters};
use teloxide::prelude::Requester;
use teloxide::types::{ChatId as TgChatId, InputFile, ThreadId as TgThreadId};

/// The Bot API's limit on a file a bot uploads.
pub(crate) const MAX_UPLOAD_BYTES: usize = 50 << 20;
/// The Bot API's limit on a photo a bot uploads with `sendPhoto`.
const MAX_PHOTO_BYTES: usize = 10 << 20;
/// The Bot API's limit on a caption, in characters.
const MAX_CAPTION_CHARS: usize = 1024;

impl Outbound {
    /// Uploads `file` as a document or photo, with its caption as plain text.
    pub async fn send_file(&self, file: &OutgoingFile) -> Result<MessageRef, PlatformError> {
        if file.bytes.len() > MAX_UPLOAD_BYTES {
            return Err(PlatformError::TooLarge {
                size: file.bytes.len() as u64,
                max: MAX_UPLOAD_BYTES as u64,
            });
        }
        let kind = match file.kind {
            FileKind::Photo if file.bytes.len() > MAX_PHOTO_BYTES => FileKind::Document,
            kind => kind,
        };
        let thread = file
            .to
            .thread
            .map(|t| tg_message_id(MessageId(t.0)).map(TgThreadId))
            .transpose()?;
        let to = self.current(&file.to);
        let caption = file.caption.as_deref().map(clip_caption);
        let input = InputFile::memory(file.bytes.clone()).file_name(file.name.clone());
        let (this, input, caption) = (self, &input, &caption);
        let chat = TgChatId(to.chat.0);
        let sent = self
            .pacer
            .run(
                &crate::send::Lane::Chat(to.chat.0),
                move || async move {
                    match kind {
                        FileKind::Document => {
                            let mut req = this.bot.send_document(chat, input.clone());
                            if let Some(c) = caption {
                                req = req.caption(c.clone());
                            }
                            if let Some(t) = thread {
                                req = req.message_thread_id(t);
                            }
                            req.await
                        }
                        FileKind::Photo => {
                            let mut req = this.bot.send_photo(chat, input.clone());
                            if let Some(c) = caption {
                                req = req.caption(c.clone());
                            }
                            if let Some(t) = thread {
                                req = req.message_thread_id(t);
                            }
                            req.await
                        }
                    }
                },
                classify,
            )
            .await
            .map_err(|e| to_platform(&e, &self.token))?;
        Ok(MessageRef {
            chat: to,
            id: MessageId(i64::from(sent.id.0)),
        })
    }
}

/// A caption within Telegram's limit, `…` at the end when cut.
fn clip_caption(caption: &str) -> String {
    if caption.chars().count() <= MAX_CAPTION_CHARS {
        return caption.to_owned();
    }
    let mut clipped: String = caption.chars().take(MAX_CAPTION_CHARS - 1).collect();
    clipped.push('…');
    clipped
}

#[cfg(test)]
mod tests {
    #[test]
    fn captions_are_clipped_to_the_bot_api_limit() {
        let long = "é".repeat(2000);
        let clipped = super::clip_caption(&long);
        assert_eq!(clipped.chars().count(), super::MAX_CAPTION_CHARS);
        assert!(clipped.ends_with('…'));
        assert_eq!(super::clip_caption("short"), "short");
    }
}
