//! `/verbose off|tools|full`: how much of a turn's work this session's chat
//! sees, kept per session; and the verbosity a turn uses.

use crate::gateway::commands::Command;
use crate::gateway::delivery::activity::Verbosity;
use crate::gateway::Inner;
use crate::store::{SessionId, SessionKey, StoreError};

pub(crate) const USAGE: &str = "Usage: `/verbose off|tools|full` — off: answers only; tools: a line per tool call while I work, one summary line above the answer; full: tools and a short summary of my reasoning (the whole of it behind a 💭 button). `/verbose default` goes back to the operator's default.";

/// Shows or sets the session's verbosity.
pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
    session: &SessionId,
) -> Result<String, StoreError> {
    let Some(arg) = cmd.args.first() else {
        let now = verbosity(inner, key, session).await;
        return Ok(format!("Verbosity here: **{}**.\n{USAGE}", now.as_str()));
    };
    if arg.eq_ignore_ascii_case("default") {
        inner.store.set_verbosity(session, None).await?;
        return Ok(format!(
            "Verbosity here is back to the default: **{}**.",
            inner.features.verbosity.as_str()
        ));
    }
    let Some(chosen) = Verbosity::parse(arg) else {
        return Ok(format!(
            "Unknown verbosity `{}`. {USAGE}",
            arg.replace('`', "'")
        ));
    };
    inner
        .store
        .set_verbosity(session, Some(chosen.as_str()))
        .await?;
    Ok(match chosen {
        Verbosity::Off => "Verbosity: **off** — answers only.".to_owned(),
        Verbosity::Tools => "Verbosity: **tools** — a line per tool call while I work.".to_owned(),
        Verbosity::Full => {
            "Verbosity: **full** — tool lines and a short summary of my reasoning (the whole of it behind a 💭 button).".to_owned()
        }
    })
}

/// The session's verbosity: its own choice, else the operator's default
/// (also when storage cannot say).
pub(crate) async fn verbosity(inner: &Inner, key: &SessionKey, session: &SessionId) -> Verbosity {
    verbosity_in(inner, inner.chat_settings(key).as_ref(), session).await
}

/// The session's verbosity in a chat whose settings are `chat` (a turn's
/// copy of them).
pub(crate) async fn verbosity_in(
    inner: &Inner,
    chat: Option<&crate::chats::ChatSettings>,
    session: &SessionId,
) -> Verbosity {
    // The chat's own default (`CHATS_FILE`), else the operator's.
    let default = chat
        .and_then(|c| c.verbosity)
        .unwrap_or(inner.features.verbosity);
    match inner.store.verbosity(session).await {
        Ok(Some(raw)) => Verbosity::parse(&raw).unwrap_or(default),
        Ok(None) => default,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the session's verbosity; using the default");
            default
        }
    }
}
