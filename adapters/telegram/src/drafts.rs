//! Native streaming in private chats: `sendMessageDraft` (Bot API 9.3), an
//! ephemeral preview Telegram shows for up to 30 s after each update and the
//! final `sendMessage` replaces. teloxide 0.17 has no such method, so it is
//! called over the bot's HTTP client, as `getUpdates` is. Drafts go in a
//! pacer lane of their own (one a `per_chat` interval, counted apart from
//! the chat's messages, and in the bot-wide quota), taking only bot-wide
//! tokens no queued message wants ([`Pacer::run_if_free`]): one that gives
//! way is carried by the next update. A chat where Telegram refuses drafts
//! is remembered; answers there stream by edits.
//!
//! [`Pacer::run_if_free`]: switchboard_platform::Pacer::run_if_free

use crate::errors::{classify, is_parse_error, scrubbed, to_platform};
use crate::send::{render, Lane, Outbound};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use switchboard_platform::{ChatAddress, DraftId, PlatformError, Retry};
use teloxide::types::ResponseParameters;
use teloxide::{ApiError, RequestError};

/// How long Telegram shows a draft after its last update.
pub(crate) const DRAFT_LIFETIME: Duration = Duration::from_secs(30);

/// What a refused draft makes of the stream: edits in that chat from now on.
const REFUSED: PlatformError = PlatformError::Unsupported("stream drafts in this chat");

/// The parameters of `sendMessageDraft`.
#[derive(Serialize)]
struct SendMessageDraft<'a> {
    chat_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_thread_id: Option<i64>,
    draft_id: u32,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parse_mode: Option<&'static str>,
}

/// The Bot API's envelope, its result ignored (`true`).
#[derive(Deserialize)]
struct Envelope {
    ok: bool,
    description: Option<ApiError>,
    parameters: Option<ResponseParameters>,
}

/// Why one `sendMessageDraft` failed.
#[derive(Debug)]
enum Failure {
    /// The Bot API's error (a 429 as `RetryAfter`), or the request's.
    Request(RequestError),
    /// An answer that is not the Bot API's (a proxy's 502): tried again
    /// with the next update.
    Garbled(u16),
}

/// Private chats where Telegram refused drafts, for the process's life.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    chats: Mutex<HashSet<i64>>,
    /// The first refusal is a warning; later chats' are informational.
    warned: AtomicBool,
}

impl Refusals {
    pub(crate) fn refused(&self, chat: i64) -> bool {
        self.lock().contains(&chat)
    }

    /// Remembers `chat`, with one log line.
    fn note(&self, chat: i64, why: &str) {
        if !self.lock().insert(chat) {
            return;
        }
        if self.warned.swap(true, Ordering::Relaxed) {
            tracing::info!(
                chat,
                reason = why,
                "Telegram refused a draft; this chat streams by edits"
            );
        } else {
            tracing::warn!(
                chat,
                reason = why,
                "Telegram refused a draft; this chat streams by edits from now on \
                 (TELEGRAM_DRAFTS=off turns drafts off everywhere)"
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<i64>> {
        self.chats.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Outbound {
    /// Shows `text` (Markdown, rendered as for an edit) as draft `id` in the
    /// private chat `to`. `Ok(false)` when it gave way (a message on its
    /// way or waiting for the bot-wide quota, the drafts' budget spent, a
    /// 429 pause); `Err(Unsupported)` when Telegram refused it (remembered);
    /// other errors (the network) change nothing for the next update.
    pub(crate) async fn draft(
        &self,
        to: &ChatAddress,
        id: DraftId,
        text: &str,
    ) -> Result<bool, PlatformError> {
        let chat = to.chat.0;
        if chat <= 0 || self.drafts.refused(chat) {
            return Err(REFUSED);
        }
        let (html, plain) = render(text)?;
        let thread = to.thread.map(|t| t.0);
        let (this, html, plain) = (self, &html, &plain);
        let sent = self
            .pacer
            .run_if_free(
                &Lane::Drafts(chat),
                &[&Lane::Chat(chat)],
                self.draft_within,
                move || async move {
                    if !plain.load(Ordering::Relaxed) {
                        match this.draft_once(chat, thread, id, html, true).await {
                            Err(Failure::Request(e)) if is_parse_error(&e) => {
                                tracing::warn!(chat, error = %scrubbed(&e, &this.token),
                                    "Telegram refused our HTML draft; sending it as plain text");
                                plain.store(true, Ordering::Relaxed);
                            }
                            other => return other,
                        }
                    }
                    this.draft_once(chat, thread, id, text, false).await
                },
                |f: &Failure| match f {
                    Failure::Request(e) => classify(e),
                    Failure::Garbled(_) => Retry::No,
                },
            )
            .await;
        match sent {
            None => Ok(false),
            Some(Ok(())) => Ok(true),
            // Paused: the next update goes once the pause is over.
            Some(Err(Failure::Request(RequestError::RetryAfter(_)))) => Ok(false),
            Some(Err(Failure::Request(e @ RequestError::Api(_)))) => {
                self.drafts.note(chat, &scrubbed(&e, &self.token));
                Err(REFUSED)
            }
            Some(Err(Failure::Request(e))) => Err(to_platform(&e, &self.token)),
            Some(Err(Failure::Garbled(status))) => Err(PlatformError::Network(format!(
                "sendMessageDraft answered HTTP {status}"
            ))),
        }
    }

    async fn draft_once(
        &self,
        chat: i64,
        thread: Option<i64>,
        id: DraftId,
        text: &str,
        html: bool,
    ) -> Result<(), Failure> {
        let mut url = self.bot.api_url();
        url.path_segments_mut()
            .map_err(|()| Failure::Garbled(0))?
            .push(&format!("bot{}", self.bot.token()))
            .push("SendMessageDraft");
        let params = SendMessageDraft {
            chat_id: chat,
            message_thread_id: thread,
            draft_id: id.get(),
            text,
            parse_mode: html.then_some("HTML"),
        };
        let body = serde_json::to_vec(&params).map_err(|_| Failure::Garbled(0))?;
        // reqwest errors carry the URL; `RequestError::from` removes the token.
        let response = self
            .bot
            .client()
            .post(url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| Failure::Request(RequestError::from(e)))?;
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| Failure::Request(RequestError::from(e)))?;
        answer(status, &bytes)
    }
}

/// The envelope → success, or the API's error as teloxide reports it (so a
/// 429 keeps its `retry_after`).
fn answer(status: u16, body: &[u8]) -> Result<(), Failure> {
    let Ok(envelope) = serde_json::from_slice::<Envelope>(body) else {
        return Err(Failure::Garbled(status));
    };
    if envelope.ok {
        return Ok(());
    }
    Err(Failure::Request(match envelope.parameters {
        Some(ResponseParameters::RetryAfter(after)) => RequestError::RetryAfter(after),
        Some(ResponseParameters::MigrateToChatId(to)) => RequestError::MigrateToChatId(to),
        None => RequestError::Api(
            envelope
                .description
                .unwrap_or_else(|| ApiError::Unknown(format!("HTTP {status}"))),
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_keep_their_meaning() {
        assert!(answer(200, br#"{"ok":true,"result":true}"#).is_ok());
        let flood = br#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}"#;
        assert!(matches!(
            answer(429, flood),
            Err(Failure::Request(RequestError::RetryAfter(s))) if s.seconds() == 3
        ));
        let refused =
            br#"{"ok":false,"error_code":400,"description":"Bad Request: TEXTDRAFT_PEER_INVALID"}"#;
        assert!(matches!(
            answer(400, refused),
            Err(Failure::Request(RequestError::Api(ApiError::Unknown(d)))) if d.contains("TEXTDRAFT_PEER_INVALID")
        ));
        assert!(matches!(
            answer(502, b"<html>bad gateway</html>"),
            Err(Failure::Garbled(502))
        ));
    }

    #[test]
    fn a_refused_chat_is_remembered_once() {
        let refusals = Refusals::default();
        assert!(!refusals.refused(5));
        refusals.note(5, "TEXTDRAFT_PEER_INVALID");
        refusals.note(5, "again");
        assert!(refusals.refused(5) && !refusals.refused(6));
        assert!(refusals.warned.load(Ordering::Relaxed));
    }
}
