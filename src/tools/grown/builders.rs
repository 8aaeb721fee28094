//! Who may add, change and remove tools from the chat (`TOOL_BUILDERS`).

use switchboard_platform::User;

/// `off`, `approvers` (default: the platforms' approvers and the local
/// console's operator) or `all` (every user allowed to talk to the bot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolBuilders {
    Off,
    #[default]
    Approvers,
    All,
}

impl ToolBuilders {
    /// `TOOL_BUILDERS`, default `approvers`.
    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ToolBuilders, crate::env::ConfigError> {
        match get("TOOL_BUILDERS") {
            None => Ok(ToolBuilders::default()),
            Some(raw) => {
                ToolBuilders::parse(&raw).map_err(|problem| crate::env::ConfigError::Invalid {
                    var: "TOOL_BUILDERS",
                    problem,
                    fix: "use approvers (default), all or off",
                })
            }
        }
    }

    /// Reads the variable's value; `Err` says what is accepted.
    pub fn parse(raw: &str) -> Result<ToolBuilders, String> {
        match raw.trim() {
            "off" | "none" => Ok(ToolBuilders::Off),
            "approvers" => Ok(ToolBuilders::Approvers),
            "all" => Ok(ToolBuilders::All),
            other => Err(format!("unknown value {other:?}")),
        }
    }

    /// Whether `user` may change tools.
    pub fn allows(self, user: &User) -> bool {
        match self {
            ToolBuilders::Off => false,
            ToolBuilders::Approvers => user.is_approver,
            ToolBuilders::All => true,
        }
    }

    /// The refusal shown to someone who may not.
    pub fn refusal(self) -> &'static str {
        match self {
            ToolBuilders::Off => "Adding tools from the chat is turned off (TOOL_BUILDERS=off).",
            _ => "Only approvers may add, change or remove tools (TOOL_BUILDERS=approvers).",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_platform::UserId;

    #[test]
    fn values_and_who_they_let_in() {
        let mut user = User {
            id: UserId(1),
            display_name: "a".into(),
            is_approver: false,
            is_bot: false,
        };
        assert_eq!(ToolBuilders::parse("all"), Ok(ToolBuilders::All));
        assert!(ToolBuilders::parse("everyone").is_err());
        assert!(!ToolBuilders::Approvers.allows(&user) && ToolBuilders::All.allows(&user));
        user.is_approver = true;
        assert!(ToolBuilders::Approvers.allows(&user) && !ToolBuilders::Off.allows(&user));
    }
}
