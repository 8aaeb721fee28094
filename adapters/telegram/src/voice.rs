//! Voice notes: `sendVoice` (multipart, an Ogg Opus `voice` file with its
//! `duration`), paced like every other send, replying to the user's message.

use crate::errors::{classify, to_platform};
use crate::send::{tg_message_id, Outbound};
use crate::upload::MAX_UPLOAD_BYTES;
use switchboard_platform::{MessageId, MessageRef, OutgoingVoice, PlatformError};
use teloxide::payloads::SendVoiceSetters;
use teloxide::prelude::Requester;
use teloxide::types::{ChatId as TgChatId, InputFile, ReplyParameters, ThreadId as TgThreadId};

/// The name the file travels under (Telegram plays it whatever the name).
const VOICE_FILE_NAME: &str = "voice.ogg";

impl Outbound {
    /// Uploads `voice` as a playable voice note, without a caption (the
    /// answer it speaks was sent as text).
    pub async fn send_voice(&self, voice: &OutgoingVoice) -> Result<MessageRef, PlatformError> {
        if voice.bytes.len() > MAX_UPLOAD_BYTES {
            return Err(PlatformError::TooLarge {
                size: voice.bytes.len() as u64,
                max: MAX_UPLOAD_BYTES as u64,
            });
        }
        let thread = voice
            .to
            .thread
            .map(|t| tg_message_id(MessageId(t.0)).map(TgThreadId))
            .transpose()?;
        let reply = voice.reply_to.map(tg_message_id).transpose()?;
        let to = self.current(&voice.to);
        let input = InputFile::memory(voice.bytes.clone()).file_name(VOICE_FILE_NAME);
        let (this, input, chat) = (self, &input, TgChatId(to.chat.0));
        let secs = voice.whole_secs();
        let sent = self
            .pacer
            .run(
                &crate::send::Lane::Chat(to.chat.0),
                move || async move {
                    let mut req = this.bot.send_voice(chat, input.clone()).duration(secs);
                    if let Some(t) = thread {
                        req = req.message_thread_id(t);
                    }
                    if let Some(r) = reply {
                        req = req.reply_parameters(
                            ReplyParameters::new(r).allow_sending_without_reply(),
                        );
                    }
                    req.await
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
