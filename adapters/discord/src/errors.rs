//! Error types: the adapter's start-up/run errors and REST call failures.

use std::time::Duration;
use switchboard_platform::PlatformError;

/// Why the Discord adapter could not start or keep running. Never contains the token.
#[derive(Debug, thiserror::Error)]
pub enum DiscordError {
    #[error(
        "Discord refused DISCORD_BOT_TOKEN (401 Unauthorized); reset the token in the \
         Developer Portal (Bot → Reset Token) and update DISCORD_BOT_TOKEN"
    )]
    Unauthorized,
    #[error(
        "Discord refused the gateway intents; enable the Message Content intent \
         (Bot → Privileged Gateway Intents) in the Developer Portal"
    )]
    Intents,
    #[error("could not reach Discord: {0}")]
    Unreachable(String),
    #[error("Discord answered unexpectedly: {0}")]
    Protocol(String),
    #[error("the Discord gateway stopped: {0}")]
    Gateway(String),
    #[error("cannot keep the Discord channel marks in {path}: {reason}")]
    State { path: String, reason: String },
}

/// A failed REST call, already scrubbed of secrets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RestError {
    /// 429: retry after `delay`; `global` pauses every call of the bot.
    RateLimited { delay: Duration, global: bool },
    /// Any other non-success status, with Discord's JSON error code when given.
    Status {
        status: u16,
        code: Option<i64>,
        message: String,
    },
    /// The request never got an answer.
    Network(String),
    /// The answer was not what Discord documents.
    Decode(String),
    /// Refused locally before sending (too long, too many buttons, bad id).
    Invalid(String),
}

/// Discord's "Interaction has already been acknowledged" JSON error code.
pub(crate) const ALREADY_ACKNOWLEDGED: i64 = 40060;

impl RestError {
    pub(crate) fn is_status(&self, wanted: u16) -> bool {
        matches!(self, RestError::Status { status, .. } if *status == wanted)
    }

    pub(crate) fn has_code(&self, wanted: i64) -> bool {
        matches!(self, RestError::Status { code: Some(code), .. } if *code == wanted)
    }
}

impl std::fmt::Display for RestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestError::RateLimited { delay, global } => write!(
                f,
                "rate limited by Discord (retry after {:.3} s{})",
                delay.as_secs_f64(),
                if *global { ", global" } else { "" }
            ),
            RestError::Status {
                status,
                code,
                message,
            } => match code {
                Some(code) => write!(f, "HTTP {status} (code {code}): {message}"),
                None => write!(f, "HTTP {status}: {message}"),
            },
            RestError::Network(e) => write!(f, "network error: {e}"),
            RestError::Decode(e) => write!(f, "unexpected answer: {e}"),
            RestError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl From<RestError> for PlatformError {
    fn from(e: RestError) -> Self {
        match e {
            RestError::Status { status: 404, .. } => PlatformError::NotFound,
            RestError::Network(msg) => PlatformError::Network(msg),
            other => PlatformError::Rejected(other.to_string()),
        }
    }
}

impl From<RestError> for DiscordError {
    fn from(e: RestError) -> Self {
        match e {
            RestError::Status { status: 401, .. } => DiscordError::Unauthorized,
            RestError::Network(msg) => DiscordError::Unreachable(msg),
            other => DiscordError::Protocol(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_platform_errors() {
        let not_found = RestError::Status {
            status: 404,
            code: Some(10008),
            message: "Unknown Message".into(),
        };
        assert!(matches!(
            PlatformError::from(not_found),
            PlatformError::NotFound
        ));
        let bad = RestError::Status {
            status: 400,
            code: Some(50035),
            message: "Invalid Form Body".into(),
        };
        assert!(bad.has_code(50035) && bad.is_status(400));
        assert_eq!(
            PlatformError::from(bad).to_string(),
            "the platform refused the request: HTTP 400 (code 50035): Invalid Form Body"
        );
        assert!(matches!(
            DiscordError::from(RestError::Status {
                status: 401,
                code: Some(0),
                message: "401: Unauthorized".into()
            }),
            DiscordError::Unauthorized
        ));
    }
}
