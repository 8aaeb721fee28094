//! What chats get by default: verbosity (`CHAT_VERBOSITY`), queue mode
//! (`QUEUE_MODE`), and whether users may set how the agent presents itself
//! to them (`IDENTITY_USER_EDITS`).

use super::{ConfigError, Lookup};
use crate::gateway::{QueueMode, Verbosity};

/// `CHAT_VERBOSITY`: off, tools (default) or full.
pub(super) fn verbosity(get: &Lookup<'_>) -> Result<Verbosity, ConfigError> {
    let Some(raw) = get("CHAT_VERBOSITY") else {
        return Ok(Verbosity::default());
    };
    Verbosity::parse(&raw).ok_or(ConfigError::Invalid {
        var: "CHAT_VERBOSITY",
        problem: format!("unknown verbosity {raw:?}"),
        fix: "use off (answers only), tools (default: a line per tool call while a turn runs) or full (tools and a short reasoning summary)",
    })
}

/// `QUEUE_MODE`: followup (default), collect or interrupt.
pub(super) fn queue_mode(get: &Lookup<'_>) -> Result<QueueMode, ConfigError> {
    let Some(raw) = get("QUEUE_MODE") else {
        return Ok(QueueMode::default());
    };
    QueueMode::parse(&raw).ok_or(ConfigError::Invalid {
        var: "QUEUE_MODE",
        problem: format!("unknown queue mode {raw:?}"),
        fix: "use followup (default: one turn per message, in order), collect (messages sent during a turn answered together next) or interrupt (a new message stops the running turn)",
    })
}

/// `IDENTITY_USER_EDITS`: off (default) or on.
pub(super) fn identity_user_edits(get: &Lookup<'_>) -> Result<bool, ConfigError> {
    Ok(super::flag(get, "IDENTITY_USER_EDITS")?.unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_tools_and_names_the_choices_when_wrong() {
        assert_eq!(verbosity(&|_| None).unwrap(), Verbosity::Tools);
        assert_eq!(
            verbosity(&|_| Some("FULL".into())).unwrap(),
            Verbosity::Full
        );
        let e = verbosity(&|_| Some("loud".into())).unwrap_err().to_string();
        assert!(e.contains("CHAT_VERBOSITY") && e.contains("off"), "{e}");
        assert_eq!(queue_mode(&|_| None).unwrap(), QueueMode::Followup);
        let e = queue_mode(&|_| Some("later".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("QUEUE_MODE") && e.contains("collect"), "{e}");
    }
}
