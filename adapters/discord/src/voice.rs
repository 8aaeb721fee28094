//! Voice messages: `POST /channels/{id}/messages` as multipart with the
//! IS_VOICE_MESSAGE flag and one Ogg Opus attachment carrying its
//! `duration_secs` and base64 `waveform` — no content, embeds or other
//! files (Discord refuses them on a voice message), paced on the channel's
//! lane like every message.

use crate::errors::RestError;
use crate::rest::Rest;
use base64::Engine;
use serde_json::json;
use switchboard_platform::OutgoingVoice;

/// The message flag of a voice message (1 << 13).
pub(crate) const IS_VOICE_MESSAGE: u64 = 1 << 13;
/// Discord's clients name voice messages so (its `.ogg` also gives the part
/// the `audio/ogg` type Discord needs to read duration and waveform).
const VOICE_FILE_NAME: &str = "voice-message.ogg";

/// The `payload_json` of a voice message: the flag and the one attachment.
pub(crate) fn payload(voice: &OutgoingVoice) -> serde_json::Value {
    let waveform = base64::engine::general_purpose::STANDARD.encode(&voice.waveform);
    json!({
        "flags": IS_VOICE_MESSAGE,
        "attachments": [{
            "id": 0,
            "filename": VOICE_FILE_NAME,
            "duration_secs": voice.duration_secs,
            "waveform": waveform,
        }],
    })
}

impl Rest {
    /// Posts `voice` as a voice message; returns its id. `limit`: the
    /// channel's upload limit.
    pub async fn create_voice_message(
        &self,
        channel: u64,
        voice: &OutgoingVoice,
        limit: usize,
    ) -> Result<u64, RestError> {
        if voice.bytes.len() > limit {
            return Err(RestError::Invalid(format!(
                "a voice note of {} bytes is over this channel's upload limit of {limit} bytes",
                voice.bytes.len()
            )));
        }
        self.post_one_attachment(
            channel,
            voice.bytes.clone(),
            VOICE_FILE_NAME.to_owned(),
            payload(voice).to_string(),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use switchboard_platform::{ChatAddress, ChatId, OutgoingVoice, Platform};

    #[test]
    fn the_payload_is_a_flagged_voice_message_without_content() {
        let voice = OutgoingVoice {
            to: ChatAddress::new(Platform::Discord, ChatId(1), None),
            reply_to: None,
            bytes: vec![1],
            duration_secs: 2.5,
            waveform: vec![0, 255, 128],
        };
        let p = super::payload(&voice);
        assert_eq!(p["flags"], 8192);
        assert!(p.get("content").is_none() && p.get("embeds").is_none());
        let a = &p["attachments"][0];
        assert_eq!(
            (a["duration_secs"].as_f64(), a["waveform"].as_str()),
            (Some(2.5), Some("AP+A"))
        );
    }
}
