//! What `sendVoice` checks of its file: an Ogg stream whose first packet is
//! an `OpusHead` (Telegram shows anything else as a file, not a voice
//! note; this fake refuses it so a test sees the mistake), and a
//! `duration`, when given, in whole seconds.

use super::api::{bad, ApiError};

/// The voice note's duration in seconds (the one given, else 0), or why
/// the request is refused.
pub fn check(data: &[u8], duration: Option<&str>) -> Result<u64, ApiError> {
    // The first page: 27 header bytes, its segment table, then `OpusHead`.
    let segments = data.get(26).copied().unwrap_or(0) as usize;
    let head = data.get(27 + segments..27 + segments + 8);
    if !data.starts_with(b"OggS") || head != Some(b"OpusHead".as_slice()) {
        return Err(bad(
            "wrong file type: a voice note must be an OGG file encoded with OPUS",
        ));
    }
    match duration {
        None => Ok(0),
        Some(d) => d
            .parse::<u64>()
            .map_err(|_| bad("field \"duration\" must be an integer")),
    }
}
