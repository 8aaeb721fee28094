//! The only place in the core that names platform adapter crates: reading their
//! configuration and connecting them.

use crate::env::ConfigError;
use std::path::Path;
use std::sync::Arc;
use switchboard_discord::{DiscordAdapter, DiscordConfig, DiscordError};
use switchboard_platform::PlatformAdapter;
use switchboard_telegram::{TelegramAdapter, TelegramConfig, TelegramError};

/// An adapter that could not connect, with its error (which never holds the
/// token: the adapters scrub it).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("Telegram: {0}")]
    Telegram(#[source] TelegramError),
    #[error("Discord: {0}")]
    Discord(#[source] DiscordError),
}

/// Configuration of every platform adapter that is enabled.
#[derive(Debug, Clone, Default)]
pub struct PlatformConfigs {
    pub telegram: Option<TelegramConfig>,
    pub discord: Option<DiscordConfig>,
}

impl PlatformConfigs {
    /// Reads `TELEGRAM_*` and `DISCORD_*`; a platform is enabled by its token.
    pub(crate) fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
        data_dir: &Path,
    ) -> Result<PlatformConfigs, ConfigError> {
        Ok(PlatformConfigs {
            telegram: TelegramConfig::from_env(get, data_dir)
                .map_err(|e| ConfigError::Platform(e.to_string()))?,
            discord: DiscordConfig::from_env(get)
                .map_err(|e| ConfigError::Platform(e.to_string()))?
                .map(|mut discord| {
                    discord.state_dir = Some(data_dir.to_owned());
                    discord
                }),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.telegram.is_none() && self.discord.is_none()
    }

    /// Connects every enabled adapter (checking credentials with the platform).
    /// Errors never contain tokens: the adapters scrub them.
    pub async fn connect(&self) -> Result<Vec<Arc<dyn PlatformAdapter>>, ConnectError> {
        let mut adapters: Vec<Arc<dyn PlatformAdapter>> = Vec::new();
        if let Some(config) = &self.telegram {
            let adapter = TelegramAdapter::connect(config.clone())
                .await
                .map_err(ConnectError::Telegram)?;
            adapters.push(Arc::new(adapter));
        }
        if let Some(config) = &self.discord {
            let adapter = DiscordAdapter::connect(config.clone())
                .await
                .map_err(ConnectError::Discord)?;
            adapters.push(Arc::new(adapter));
        }
        Ok(adapters)
    }
}

/// The outcome of checking one platform's bot token (`switchboard doctor`).
#[derive(Debug)]
pub struct TokenCheck {
    /// "Telegram" or "Discord".
    pub platform: &'static str,
    /// The variable holding the token.
    pub var: &'static str,
    /// Who the bot is (`bot @name`, `bot id N`), or why the platform refused
    /// or could not be asked (never containing the token).
    pub result: Result<String, String>,
}

impl PlatformConfigs {
    /// Asks each enabled platform who the bot is (`getMe`, `GET /users/@me`)
    /// at its configured API URL. The adapters are connected and dropped
    /// without running: no update is fetched, no gateway session opened.
    pub async fn check_tokens(&self) -> Vec<TokenCheck> {
        let mut out = Vec::new();
        if let Some(config) = &self.telegram {
            // Connecting also creates the adapter's state directory; a check
            // leaves DATA_DIR alone (doctor checks it on its own).
            let mut config = config.clone();
            config.state_dir = std::env::temp_dir();
            out.push(TokenCheck {
                platform: "Telegram",
                var: "TELEGRAM_BOT_TOKEN",
                result: TelegramAdapter::connect(config)
                    .await
                    .map(|a| format!("bot @{}", a.bot_username()))
                    .map_err(|e| e.to_string()),
            });
        }
        if let Some(config) = &self.discord {
            let mut config = config.clone();
            config.state_dir = None;
            out.push(TokenCheck {
                platform: "Discord",
                var: "DISCORD_BOT_TOKEN",
                result: DiscordAdapter::connect(config)
                    .await
                    .map(|a| format!("bot id {}", a.bot_user_id()))
                    .map_err(|e| e.to_string()),
            });
        }
        out
    }
}

/// Which variables enable which platform (for `switchboard run` without any).
pub const PLATFORM_HELP: &str = "No chat platform is configured. Set TELEGRAM_BOT_TOKEN to enable Telegram, \
DISCORD_BOT_TOKEN to enable Discord (see .env.example), or use `switchboard chat` for a local console.";
