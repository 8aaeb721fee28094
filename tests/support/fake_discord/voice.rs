//! Voice messages as Discord takes them (`flags` with IS_VOICE_MESSAGE,
//! 1 << 13): no content, embeds or components (50159), exactly one audio
//! attachment — an `audio/*` file part (50160) — declared with its
//! `duration_secs` (a number) and a `waveform` of base64 decoding to at
//! most 256 bytes (50161).

use super::rest::{error, Answer};
use base64::Engine;
use serde_json::Value;

pub const IS_VOICE_MESSAGE: u64 = 1 << 13;

pub fn is_voice(payload: &Value) -> bool {
    payload["flags"]
        .as_u64()
        .is_some_and(|f| f & IS_VOICE_MESSAGE != 0)
}

/// Checks a voice message's payload (as sent, before the fake rewrites its
/// `attachments`) and its files: `(id, filename, content type)`.
pub fn check(payload: &Value, files: &[(u64, String, Option<String>)]) -> Result<(), Answer> {
    let content = payload["content"].as_str().unwrap_or_default();
    let extra = |field: &str| payload[field].as_array().is_some_and(|a| !a.is_empty());
    if !content.is_empty() || extra("embeds") || extra("components") || extra("sticker_ids") {
        return Err(error(
            400,
            50159,
            "Voice messages do not support additional content.",
        ));
    }
    let declared = payload["attachments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let audio = files.len() == 1
        && files[0]
            .2
            .as_deref()
            .is_some_and(|t| t.starts_with("audio/"));
    if declared.len() != 1 || !audio {
        return Err(error(
            400,
            50160,
            "Voice messages must have a single audio attachment.",
        ));
    }
    let a = &declared[0];
    let waveform = a["waveform"]
        .as_str()
        .and_then(|w| base64::engine::general_purpose::STANDARD.decode(w).ok());
    let duration = a["duration_secs"].as_f64().filter(|d| *d > 0.0);
    match (waveform, duration) {
        (Some(w), Some(_)) if !w.is_empty() && w.len() <= 256 => Ok(()),
        _ => Err(error(
            400,
            50161,
            "Voice messages must have supporting metadata.",
        )),
    }
}
