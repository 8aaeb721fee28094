//! The adapter's error type and the mapping of teloxide errors to the contract,
//! with the bot token scrubbed out of every message.

use std::error::Error as _;
use switchboard_platform::{PlatformError, Retry, Secret};
use teloxide::{ApiError, RequestError};

/// Why the adapter could not start or keep running.
#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    #[error("Telegram rejected the bot token (TELEGRAM_BOT_TOKEN); check it with @BotFather")]
    InvalidToken,
    #[error("cannot reach the Telegram Bot API: {0}")]
    Network(String),
    #[error("the Telegram Bot API refused {method}: {detail}")]
    Api {
        method: &'static str,
        detail: String,
    },
    #[error("invalid configuration: {0}")]
    Config(#[from] crate::config::TelegramConfigError),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("cannot use the state directory {path}: {detail}")]
    State { path: String, detail: String },
    #[error("cannot bind the webhook listener {addr}: {detail}")]
    Bind { addr: String, detail: String },
}

/// Why a `getUpdates` answer brought no batch. Never carries the body: it
/// holds the users' messages.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpdatesError {
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error("unusable getUpdates answer: {0}")]
    Shape(#[from] crate::raw_json::ScanError),
    #[error("unusable getUpdates answer: {0}")]
    Envelope(&'static str),
    /// A non-2xx answer that is not a Bot API envelope (a proxy's 502…).
    #[error("getUpdates answered HTTP {0}")]
    Status(u16),
}

/// The full text of `e` and its sources, with the token removed. reqwest's
/// errors carry the request URL, and Telegram's URLs carry the token.
pub(crate) fn scrubbed(e: &RequestError, token: &Secret) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    token.scrub(&text)
}

/// Maps a failed start-up call.
pub(crate) fn startup_error(
    method: &'static str,
    e: &RequestError,
    token: &Secret,
) -> TelegramError {
    match e {
        RequestError::Api(ApiError::InvalidToken) => TelegramError::InvalidToken,
        RequestError::Network(_) | RequestError::Io(_) => {
            TelegramError::Network(scrubbed(e, token))
        }
        _ => TelegramError::Api {
            method,
            detail: scrubbed(e, token),
        },
    }
}

/// What the pacer should do with a failed call: only 429s are retried.
pub(crate) fn classify(e: &RequestError) -> Retry {
    match e {
        RequestError::RetryAfter(after) => Retry::After {
            delay: after.duration(),
            global: false,
        },
        _ => Retry::No,
    }
}

/// "message is not modified": an edit to identical content, which is success.
pub(crate) fn is_not_modified(e: &RequestError) -> bool {
    match e {
        RequestError::Api(ApiError::MessageNotModified) => true,
        RequestError::Api(ApiError::Unknown(text)) => text.contains("message is not modified"),
        _ => false,
    }
}

/// Telegram could not parse our HTML: resend as plain text.
pub(crate) fn is_parse_error(e: &RequestError) -> bool {
    match e {
        RequestError::Api(ApiError::CantParseEntities(_)) => true,
        RequestError::Api(ApiError::Unknown(text)) => text.contains("can't parse entities"),
        _ => false,
    }
}

/// Maps a failed outbound call to the contract's error.
pub(crate) fn to_platform(e: &RequestError, token: &Secret) -> PlatformError {
    match e {
        RequestError::Api(
            ApiError::ChatNotFound
            | ApiError::MessageToEditNotFound
            | ApiError::MessageIdInvalid
            | ApiError::MessageToReplyNotFound
            | ApiError::UserNotFound,
        ) => PlatformError::NotFound,
        RequestError::Api(ApiError::MessageIsTooLong) => PlatformError::TooLong {
            len: 0,
            max: crate::send::MAX_TEXT_UTF16,
        },
        RequestError::Network(_) | RequestError::Io(_) => {
            PlatformError::Network(scrubbed(e, token))
        }
        RequestError::RetryAfter(after) => PlatformError::Rejected(format!(
            "still rate limited after retries (retry after {} s)",
            after.seconds()
        )),
        _ => PlatformError::Rejected(scrubbed(e, token)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use teloxide::types::Seconds;

    #[test]
    fn only_429_is_retried() {
        assert_eq!(
            classify(&RequestError::RetryAfter(Seconds::from_seconds(3))),
            Retry::After {
                delay: Duration::from_secs(3),
                global: false
            }
        );
        assert_eq!(
            classify(&RequestError::Api(ApiError::ChatNotFound)),
            Retry::No
        );
    }

    #[test]
    fn recognizes_not_modified_and_parse_errors() {
        assert!(is_not_modified(&RequestError::Api(
            ApiError::MessageNotModified
        )));
        assert!(is_parse_error(&RequestError::Api(
            ApiError::CantParseEntities("Bad Request: can't parse entities: x".into())
        )));
        assert!(!is_parse_error(&RequestError::Api(ApiError::ChatNotFound)));
    }

    #[test]
    fn api_errors_are_scrubbed() {
        let token = Secret::new("123:SECRETSECRET");
        let e = RequestError::Api(ApiError::Unknown(
            "odd failure at /bot123:SECRETSECRET/SendMessage".into(),
        ));
        let text = to_platform(&e, &token).to_string();
        assert!(!text.contains("SECRETSECRET"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
