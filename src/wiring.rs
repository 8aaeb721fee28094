//! The only place in the core that names platform adapter crates: reading their
//! configuration and connecting them.

use crate::config::ConfigError;
use std::path::Path;
use std::sync::Arc;
use switchboard_platform::PlatformAdapter;

/// Configuration of every platform adapter that is enabled.
#[derive(Debug, Clone, Default)]
pub struct PlatformConfigs {}

impl PlatformConfigs {
    pub(crate) fn from_lookup(_get: &dyn Fn(&str) -> Option<String>, _data_dir: &Path) -> Result<PlatformConfigs, ConfigError> {
        Ok(PlatformConfigs {})
    }

    pub fn is_empty(&self) -> bool {
        true
    }

    /// Connects every enabled adapter (checking credentials with the platform).
    pub async fn connect(&self) -> Result<Vec<Arc<dyn PlatformAdapter>>, String> {
        Ok(Vec::new())
    }
}

/// Which variables enable which platform (for `switchboard run` without any).
pub const PLATFORM_HELP: &str = "No chat platform is configured. Set TELEGRAM_BOT_TOKEN to enable Telegram, \
DISCORD_BOT_TOKEN to enable Discord (see .env.example), or use `switchboard chat` for a local console.";
