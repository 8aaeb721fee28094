//! `switchboard mcp`'s settings: where an external agent's notices, cards
//! and questions go (`MCP_NOTIFY_CHAT`; the operator's choice, never the
//! client's), and whether it serves Streamable HTTP (`MCP_LISTEN`, with the
//! bearer token `MCP_TOKEN`) instead of stdio.

use super::{web, ConfigError, Lookup};
use std::net::SocketAddr;
use switchboard_platform::{ChatAddress, ChatId, Platform, Secret, ThreadId};

use crate::mcp::serve::{Exposure, OwnToolsConfig, ServerUser};
pub use crate::mcp::McpHttpConfig;

/// `MCP_SERVER_TOOLS` and `MCP_SERVER_USER`: which of the agent's own tools
/// `switchboard mcp` offers, and as whom. A tier set without a user is
/// refused; left unset without a user, none are offered.
pub(super) fn own_tools(get: &Lookup<'_>) -> Result<OwnToolsConfig, ConfigError> {
    let exposure = match get("MCP_SERVER_TOOLS") {
        None => None,
        Some(raw) => Some(
            Exposure::parse(&raw).map_err(|problem| ConfigError::Invalid {
                var: "MCP_SERVER_TOOLS",
                problem,
                fix: "use read (default), data, act, all or none",
            })?,
        ),
    };
    let user = match get("MCP_SERVER_USER") {
        None => None,
        Some(raw) => Some(
            ServerUser::parse(&raw).map_err(|problem| ConfigError::Invalid {
                var: "MCP_SERVER_USER",
                problem,
                fix: "use telegram:<user_id>[@<chat_id>] or discord:<user_id>[@<channel_id>]",
            })?,
        ),
    };
    if user.is_none() && exposure.is_some_and(|e| e != Exposure::None) {
        return Err(ConfigError::Missing {
            var: "MCP_SERVER_USER",
            fix: "MCP_SERVER_TOOLS offers the agent's own tools, which act as one user: set MCP_SERVER_USER=telegram:<user_id> (or discord:<user_id>@<channel_id>), or MCP_SERVER_TOOLS=none",
        });
    }
    Ok(OwnToolsConfig {
        exposure: exposure.unwrap_or_default(),
        user,
    })
}

/// `MCP_LISTEN` and `MCP_TOKEN`: none when `MCP_LISTEN` is unset (stdio);
/// a listener without a long enough token is refused.
pub(super) fn http(get: &Lookup<'_>) -> Result<Option<McpHttpConfig>, ConfigError> {
    let Some(raw) = get("MCP_LISTEN") else {
        return Ok(None);
    };
    let listen = raw
        .parse::<SocketAddr>()
        .map_err(|_| ConfigError::Invalid {
            var: "MCP_LISTEN",
            problem: format!("{raw:?} is not an address with a port"),
            fix: "use IP:PORT, e.g. MCP_LISTEN=127.0.0.1:8766, or unset it for stdio",
        })?;
    let token = get("MCP_TOKEN")
        .map(Secret::new)
        .ok_or(ConfigError::Missing {
            var: "MCP_TOKEN",
            fix: "MCP_LISTEN serves `switchboard mcp` over HTTP, and every request must carry this token: set it to a long random value (e.g. $(openssl rand -hex 24)), or unset MCP_LISTEN",
        })?;
    web::long_enough(
        "MCP_TOKEN",
        &token,
        "use a long random value, e.g. MCP_TOKEN=$(openssl rand -hex 24)",
    )?;
    Ok(Some(McpHttpConfig { listen, token }))
}

const FIX: &str = "use telegram:<chat_id>, telegram:<chat_id>/<topic_id>, discord:<channel_id> or discord:<channel_id>/<thread_id>, or unset it";

/// `MCP_NOTIFY_CHAT`: the chat `switchboard mcp` posts to (unset: the
/// server starts, and its tools say it is not configured).
pub(super) fn notify_chat(get: &Lookup<'_>) -> Result<Option<ChatAddress>, ConfigError> {
    let Some(raw) = get("MCP_NOTIFY_CHAT") else {
        return Ok(None);
    };
    parse(raw.trim())
        .map(Some)
        .ok_or_else(|| ConfigError::Invalid {
            var: "MCP_NOTIFY_CHAT",
            problem: format!("{raw:?} is not a platform and chat id"),
            fix: FIX,
        })
}

fn parse(raw: &str) -> Option<ChatAddress> {
    let (platform, rest) = raw.split_once(':')?;
    let platform = match Platform::parse(platform)? {
        p @ (Platform::Telegram | Platform::Discord) => p,
        _ => return None,
    };
    let (chat, thread) = match rest.split_once('/') {
        Some((chat, thread)) => (chat, Some(ThreadId(thread.parse().ok()?))),
        None => (rest, None),
    };
    Some(ChatAddress::new(
        platform,
        ChatId(chat.parse().ok()?),
        thread,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn http_of(vars: &[(&str, &str)]) -> Result<Option<McpHttpConfig>, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        http(&|k: &str| map.get(k).cloned())
    }

    #[test]
    fn stdio_by_default_and_a_listener_needs_a_long_token() {
        assert!(http_of(&[]).unwrap().is_none());
        assert!(http_of(&[("MCP_TOKEN", "0123456789abcdef0123")])
            .unwrap()
            .is_none());
        for vars in [
            &[("MCP_LISTEN", "127.0.0.1:8766")][..],
            &[("MCP_LISTEN", "127.0.0.1:8766"), ("MCP_TOKEN", "short")][..],
        ] {
            let err = http_of(vars).unwrap_err().to_string();
            assert!(err.starts_with("MCP_TOKEN"), "{err}");
        }
        let err = http_of(&[("MCP_LISTEN", "localhost")])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("MCP_LISTEN"), "{err}");
        let ok = http_of(&[
            ("MCP_LISTEN", "0.0.0.0:8766"),
            ("MCP_TOKEN", "0123456789abcdef0123"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(ok.listen.port(), 8766);
        assert!(!format!("{ok:?}").contains("0123456789"), "{ok:?}");
    }

    #[test]
    fn the_token_is_registered_as_a_secret() {
        let vars = [
            ("LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("LLM_MODEL", "m"),
            ("MCP_LISTEN", "127.0.0.1:8766"),
            ("MCP_TOKEN", "mcp-token-5d2c9e41aa"),
        ];
        let config = crate::config::Config::from_lookup(|k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        })
        .unwrap();
        assert!(config.mcp_http.is_some());
        let secrets = config.secret_values();
        assert!(secrets.iter().any(|s| s == "mcp-token-5d2c9e41aa"));
    }

    fn own_of(vars: &[(&str, &str)]) -> Result<OwnToolsConfig, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        own_tools(&|k: &str| map.get(k).cloned())
    }

    #[test]
    fn own_tools_need_a_well_formed_user() {
        let none = own_of(&[]).unwrap();
        assert_eq!(none.effective(), Exposure::None);
        let read = own_of(&[("MCP_SERVER_USER", "telegram:900")]).unwrap();
        assert_eq!(read.effective(), Exposure::Read);
        let act = own_of(&[
            ("MCP_SERVER_USER", "discord:5@77"),
            ("MCP_SERVER_TOOLS", "act"),
        ])
        .unwrap();
        assert_eq!(act.effective(), Exposure::Act);
        assert_eq!(
            own_of(&[("MCP_SERVER_TOOLS", "none")]).unwrap().effective(),
            Exposure::None
        );
        let err = own_of(&[("MCP_SERVER_TOOLS", "data")])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("MCP_SERVER_USER is not set"), "{err}");
        let err = own_of(&[("MCP_SERVER_USER", "telegram:ann")])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("MCP_SERVER_USER is invalid"), "{err}");
        let err = own_of(&[
            ("MCP_SERVER_USER", "telegram:1"),
            ("MCP_SERVER_TOOLS", "write"),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("MCP_SERVER_TOOLS is invalid"), "{err}");
    }

    #[test]
    fn targets_parse_and_bad_ones_are_refused() {
        let t = parse("telegram:-1001234").unwrap();
        assert_eq!(
            (t.platform, t.chat, t.thread),
            (Platform::Telegram, ChatId(-1001234), None)
        );
        let d = parse("discord:42/43").unwrap();
        assert_eq!(
            (d.platform, d.chat, d.thread),
            (Platform::Discord, ChatId(42), Some(ThreadId(43)))
        );
        for bad in [
            "",
            "telegram",
            "telegram:",
            "slack:1",
            "console:1",
            "telegram:x",
            "discord:1/y",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
