//! The web console's settings (read from `WEB_*` by `crate::config`).

use std::net::SocketAddr;
use switchboard_platform::Secret;

/// The shortest `WEB_TOKEN` (or `MCP_TOKEN`) accepted: guessing it must be
/// hopeless.
pub const MIN_WEB_TOKEN_CHARS: usize = 16;

/// The web console's settings; off unless `WEB_LISTEN` is set.
#[derive(Debug, Clone, Default)]
pub struct WebConfig {
    /// Where the console is served (`WEB_LISTEN`); off when unset.
    pub listen: Option<SocketAddr>,
    /// The login token (`WEB_TOKEN`); required unless `listen` is loopback.
    pub token: Option<Secret>,
}
