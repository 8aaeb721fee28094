//! Voice replies: after the text answer is out, the same answer spoken
//! (`TTS_BASE_URL`) and sent as a voice note — when the user spoke to us
//! (reply in kind) or asked with `/voice on`. The text never waits on the
//! audio and never depends on it: a failure costs one line saying so.

use crate::agent::{StopReason, TurnOutcome};
use crate::gateway::delivery::origin::Origin;
use crate::gateway::delivery::outbound::send_text;
use crate::gateway::Inner;
use crate::store::SessionId;
use switchboard_platform::{AttachmentKind, InboundMessage, OutgoingVoice, PlatformError};

/// Why a voice reply was not sent, as the user reads it.
#[derive(Debug, thiserror::Error)]
enum VoiceReplyError {
    #[error(transparent)]
    Speech(#[from] crate::media::TtsError),
    #[error("the speech service sent audio I can't play ({0})")]
    Unplayable(#[from] switchboard_platform::VoiceError),
    #[error("the audio is {size} bytes, more than this chat takes ({max})")]
    TooLarge { size: usize, max: usize },
    #[error("the chat refused it ({0})")]
    Platform(#[from] PlatformError),
}

/// Notes whether `m`, the session's latest message, is a voice note: its
/// answer — now, or resumed after an approval — replies in kind.
pub(in crate::gateway) async fn note_input(inner: &Inner, session: &SessionId, m: &InboundMessage) {
    if !inner.features.media.speaks() {
        return;
    }
    let spoke = m
        .attachments
        .iter()
        .any(|a| a.kind == AttachmentKind::Voice);
    if let Err(e) = inner.store.set_voice_in(session, spoke).await {
        tracing::warn!(error = %e, "could not note whether the message was a voice note");
    }
}

/// Whether the session's answers are spoken: `/voice on|off`, else in kind.
async fn wanted(inner: &Inner, session: &SessionId) -> bool {
    match inner.store.voice_reply(session).await {
        Ok((Some(choice), _)) => choice == "on",
        Ok((None, voice_in)) => voice_in,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the session's voice setting; text only");
            false
        }
    }
}

/// Speaks the delivered answer of `outcome` into the chat when the session
/// wants it; says in one line when that failed.
pub(in crate::gateway) async fn after_answer(inner: &Inner, o: &Origin, outcome: &TurnOutcome) {
    let spoken_stop = matches!(
        outcome.stop,
        StopReason::Answered | StopReason::WaitingForUser
    );
    if !spoken_stop || !inner.features.media.speaks() || !wanted(inner, &o.session).await {
        return;
    }
    let result = send(inner, o, &outcome.text).await;
    let reason = match result {
        Ok(()) | Err(VoiceReplyError::Speech(crate::media::TtsError::Nothing)) => return,
        Err(e) => e,
    };
    tracing::warn!(error = %reason, "no voice reply; the answer went out as text");
    let line = format!("_(🔊 No voice reply this time: {reason}. The answer is above as text.)_");
    if let Err(e) = send_text(o.adapter.as_ref(), &o.conversation.chat, &line, None).await {
        tracing::warn!(error = %e, "could not say that the voice reply failed");
    }
}

/// Synthesizes `text`, checks the audio and sends it as a voice note.
async fn send(inner: &Inner, o: &Origin, text: &str) -> Result<(), VoiceReplyError> {
    let audio = inner.features.media.speak(text).await?;
    let max = o.adapter.upload_limit(o.conversation.chat);
    if audio.len() > max {
        return Err(VoiceReplyError::TooLarge {
            size: audio.len(),
            max,
        });
    }
    let voice =
        OutgoingVoice::ogg_opus(o.conversation.chat, audio)?.replying_to(o.conversation.reply_to);
    o.adapter.send_voice(voice).await?;
    Ok(())
}
