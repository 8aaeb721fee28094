//! A message's files taken in before its turn: downloaded and read by the
//! media layer, what was refused or heard said to the user first, and the
//! rest folded into what the model is told the user said.

use crate::gateway::delivery::origin::Origin;
use crate::gateway::delivery::outbound::send_text;
use crate::gateway::text;
use crate::gateway::Inner;
use crate::llm::Image;
use switchboard_platform::{Activity, InboundMessage};

/// The model's view of `m`: its text (a voice note's transcript when it has
/// none), the notes on its files, and its images. `None` when nothing is
/// left for the model (every file refused, no text): the user has been told.
pub(in crate::gateway) async fn user_said(
    inner: &Inner,
    o: &Origin,
    m: &InboundMessage,
) -> Option<(String, Vec<Image>)> {
    let mut said = text::user_text(&m.text);
    if m.attachments.is_empty() {
        return Some((said, Vec::new()));
    }
    let chat = &o.conversation.chat;
    let _ = o.adapter.activity(chat, Activity::Typing).await;
    let intake = inner
        .features
        .media
        .take_in(o.adapter.as_ref(), m, &o.session)
        .await;
    for notice in &intake.notices {
        if let Err(e) = send_text(o.adapter.as_ref(), chat, notice, Some(m.message_id)).await {
            tracing::warn!(error = %e, "could not tell the user about a file");
        }
    }
    // The indicator shown while the files came in ends here, whatever comes
    // next: the turn starts its own, and a refusal (nothing left for the
    // model, the budget spent) must not leave this one renewing until the
    // adapter's cap — adapters count each `Typing` as a turn to end.
    let _ = o.adapter.activity(chat, Activity::Idle).await;
    if intake.is_empty() && m.text.trim().is_empty() {
        return None;
    }
    let heard: Vec<String> = intake
        .transcripts
        .iter()
        .map(|t| text::user_text(t))
        .collect();
    let mut parts: Vec<String> = Vec::new();
    if !said.trim().is_empty() {
        parts.push(said);
    }
    if !heard.is_empty() {
        parts.push(format!("(said in a voice message) {}", heard.join("\n")));
    }
    parts.extend(intake.notes);
    said = parts.join("\n");
    Some((said, intake.images))
}
