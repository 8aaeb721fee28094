//! `/voice on|off|auto`: whether this session's answers also come as voice
//! notes (`TTS_BASE_URL`), kept per session.

use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::store::{SessionId, StoreError};

pub(crate) const USAGE: &str = "Usage: `/voice on|off|auto` — on: every answer also as a voice note; off: text only; auto (the default): a voice reply when you send a voice note.";

/// What `/voice` says where no speech service is set up.
pub(crate) const NO_TTS: &str = "🔊 Voice replies aren't set up here: the operator can set TTS_BASE_URL (an OpenAI-compatible /audio/speech endpoint) to enable them.";

/// Shows or sets the session's voice replies.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    session: &SessionId,
) -> Result<String, StoreError> {
    if !inner.features.media.speaks() {
        return Ok(NO_TTS.to_owned());
    }
    let Some(arg) = cmd.args.first().map(|a| a.to_ascii_lowercase()) else {
        let now = match inner.store.voice_reply(session).await?.0.as_deref() {
            Some("on") => "on",
            Some("off") => "off",
            _ => "auto",
        };
        return Ok(format!("Voice replies here: **{now}**.\n{USAGE}"));
    };
    let (stored, said) = match arg.as_str() {
        "on" => (Some("on"), "Voice replies: **on** — every answer also comes as a voice note (the text still comes first)."),
        "off" => (Some("off"), "Voice replies: **off** — text only, even when you send a voice note."),
        "auto" | "default" => (None, "Voice replies: **auto** — a voice reply when you send a voice note."),
        _ => {
            return Ok(format!(
                "Unknown choice `{}`. {USAGE}",
                arg.replace('`', "'")
            ))
        }
    };
    inner.store.set_voice_reply(session, stored).await?;
    Ok(said.to_owned())
}
