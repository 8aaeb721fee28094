//! Which of the agent's own tools `switchboard mcp` offers other agents
//! (`MCP_SERVER_TOOLS`: a tier), and whose they are (`MCP_SERVER_USER`: the
//! user whose memory, ledger, approval rules and caps the calls act as).

use crate::tools::ToolSource;
use switchboard_platform::{ChatAddress, ChatId, Platform, UserId};

/// How far up the tiers a tool (or one call of it) reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Reads the user's data (memory recall, portfolio views, task lists).
    Read,
    /// Writes the agent's own data about the user (memory save, forget).
    Data,
    /// Has effects outside (HTTP tools, portfolio orders, schedules,
    /// fetching pages), each under the same approval rules as in a chat.
    Act,
    /// The machine itself: the workspace's files, commands and scripts.
    All,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Data => "data",
            Tier::Act => "act",
            Tier::All => "all",
        }
    }
}

/// `MCP_SERVER_TOOLS`: none, or the highest tier offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exposure {
    None,
    #[default]
    Read,
    Data,
    Act,
    All,
}

impl Exposure {
    /// Reads the variable's value; `Err` says what is accepted.
    pub fn parse(raw: &str) -> Result<Exposure, String> {
        match raw.trim() {
            "none" | "off" => Ok(Exposure::None),
            "read" => Ok(Exposure::Read),
            "data" => Ok(Exposure::Data),
            "act" => Ok(Exposure::Act),
            "all" => Ok(Exposure::All),
            other => Err(format!("unknown value {other:?}")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::None => "none",
            Exposure::Read => "read",
            Exposure::Data => "data",
            Exposure::Act => "act",
            Exposure::All => "all",
        }
    }

    /// The highest tier offered, `None` for none.
    pub fn ceiling(self) -> Option<Tier> {
        match self {
            Exposure::None => None,
            Exposure::Read => Some(Tier::Read),
            Exposure::Data => Some(Tier::Data),
            Exposure::Act => Some(Tier::Act),
            Exposure::All => Some(Tier::All),
        }
    }

    /// Whether a tool or call of `tier` is offered.
    pub fn offers(self, tier: Tier) -> bool {
        self.ceiling().is_some_and(|top| tier <= top)
    }
}

/// The lowest tier at which a tool is offered; `None`: never over MCP (it
/// needs a chat turn — asking, sending files, skills, delegating — or it
/// changes the tools, or it is another MCP server's).
pub fn tier_of(name: &str, source: &ToolSource) -> Option<Tier> {
    match name {
        "recall"
        | "portfolio"
        | "check_background_tasks"
        | "query_my_chat_history"
        | "get_my_reflections"
        | "get_my_feedback" => Some(Tier::Read),
        "remember" | "forget" => Some(Tier::Data),
        "update_portfolio" | "web_fetch" | "web_search" | "schedule" => Some(Tier::Act),
        "read_file" | "write_file" | "exec_command" => Some(Tier::All),
        _ => match source {
            ToolSource::Http | ToolSource::Grown => Some(Tier::Act),
            ToolSource::Script => Some(Tier::All),
            ToolSource::BuiltIn | ToolSource::Mcp(_) => None,
        },
    }
}

/// `MCP_SERVER_USER`: `telegram:<id>[@<chat>]` or `discord:<id>[@<chat>]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerUser {
    pub platform: Platform,
    pub user: UserId,
    /// The chat the calls act in (where a schedule fires); the user's own
    /// direct chat when not given (on Telegram, the same id).
    pub chat: ChatAddress,
    /// Whether `@<chat>` was given.
    pub named_chat: bool,
}

impl ServerUser {
    /// Reads `platform:<id>[@<chat>]`; `Err` says what is wrong.
    pub fn parse(raw: &str) -> Result<ServerUser, String> {
        let raw = raw.trim();
        let (platform, rest) = raw
            .split_once(':')
            .ok_or_else(|| format!("{raw:?} has no platform (telegram: or discord:)"))?;
        let platform = match Platform::parse(platform) {
            Some(p @ (Platform::Telegram | Platform::Discord)) => p,
            _ => return Err(format!("{platform:?} is not telegram or discord")),
        };
        let (user, chat) = match rest.split_once('@') {
            Some((user, chat)) => (user, Some(chat)),
            None => (rest, None),
        };
        let user: i64 = user
            .parse()
            .ok()
            .filter(|id: &i64| *id > 0)
            .ok_or_else(|| format!("the user id {user:?} is not a positive number"))?;
        let chat: i64 = match chat {
            Some(c) => c
                .parse()
                .map_err(|_| format!("the chat id {c:?} is not a number"))?,
            None => user,
        };
        Ok(ServerUser {
            platform,
            user: UserId(user),
            chat: ChatAddress::new(platform, ChatId(chat), None),
            named_chat: rest.contains('@'),
        })
    }

    /// `telegram:900` / `discord:5@77`, for doctor and the audit log.
    pub fn describe(&self) -> String {
        let mut out = format!("{}:{}", self.platform.as_str(), self.user.0);
        if self.named_chat {
            out.push_str(&format!("@{}", self.chat.chat.0));
        }
        out
    }
}

/// What `switchboard mcp` offers of the agent's own tools, and as whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OwnToolsConfig {
    pub exposure: Exposure,
    /// `None`: no own tools are offered (whatever the tier).
    pub user: Option<ServerUser>,
}

impl OwnToolsConfig {
    /// The tier in effect: none without a user.
    pub fn effective(&self) -> Exposure {
        match self.user {
            Some(_) => self.exposure,
            None => Exposure::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_nest_and_none_offers_nothing() {
        assert!(Exposure::Read.offers(Tier::Read));
        assert!(!Exposure::Read.offers(Tier::Data));
        assert!(Exposure::Act.offers(Tier::Data));
        assert!(!Exposure::Act.offers(Tier::All));
        assert!(Exposure::All.offers(Tier::All));
        assert!(!Exposure::None.offers(Tier::Read));
        assert_eq!(Exposure::parse(" data "), Ok(Exposure::Data));
        assert!(Exposure::parse("write").is_err());
    }

    #[test]
    fn tools_fall_into_their_tiers() {
        let built_in = ToolSource::BuiltIn;
        assert_eq!(tier_of("recall", &built_in), Some(Tier::Read));
        assert_eq!(tier_of("remember", &built_in), Some(Tier::Data));
        assert_eq!(tier_of("update_portfolio", &built_in), Some(Tier::Act));
        assert_eq!(tier_of("exec_command", &built_in), Some(Tier::All));
        assert_eq!(tier_of("weather", &ToolSource::Http), Some(Tier::Act));
        assert_eq!(tier_of("ask_user", &built_in), None);
        assert_eq!(tier_of("http_tool", &built_in), None);
        assert_eq!(tier_of("mcp_x_y", &ToolSource::Mcp("x".into())), None);
    }

    #[test]
    fn server_users_parse_with_and_without_a_chat() {
        let u = ServerUser::parse("telegram:900").unwrap();
        assert_eq!(
            (u.user, u.chat.chat, u.named_chat),
            (UserId(900), ChatId(900), false)
        );
        let u = ServerUser::parse("discord:5@-77").unwrap();
        assert_eq!(u.platform, Platform::Discord);
        assert_eq!((u.user, u.chat.chat), (UserId(5), ChatId(-77)));
        assert_eq!(u.describe(), "discord:5@-77");
        for bad in [
            "900",
            "slack:1",
            "telegram:abc",
            "telegram:1@x",
            "telegram:",
        ] {
            assert!(ServerUser::parse(bad).is_err(), "{bad}");
        }
    }
}
