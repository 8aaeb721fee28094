//! What chats see by default (`CHAT_VERBOSITY`).

use super::{ConfigError, Lookup};
use crate::gateway::Verbosity;

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
    }
}
