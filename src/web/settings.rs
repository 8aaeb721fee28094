//! The web console's settings (read from `WEB_*` by `crate::config`).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use switchboard_platform::Secret;

/// The shortest `WEB_TOKEN` (or `MCP_TOKEN`) accepted: guessing it must be
/// hopeless.
pub const MIN_WEB_TOKEN_CHARS: usize = 16;

/// How long the token, once entered, lets a session approve without being
/// asked again, unless `WEB_REAUTH_SECS` says otherwise.
pub const DEFAULT_REAUTH: Duration = Duration::from_secs(300);

/// The web console's settings; off unless `WEB_LISTEN` is set.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Where the console is served (`WEB_LISTEN`); off when unset.
    pub listen: Option<SocketAddr>,
    /// The login token (`WEB_TOKEN`); required unless `listen` is loopback.
    pub token: Option<Secret>,
    /// How long after the token was last entered a session may approve
    /// (`WEB_REAUTH_SECS`; zero: the token is asked with every approval).
    pub reauth: Duration,
    /// Proxies whose `X-Forwarded-For` names the client (`WEB_TRUSTED_PROXY`).
    pub trusted_proxies: Vec<IpAddr>,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            listen: None,
            token: None,
            reauth: DEFAULT_REAUTH,
            trusted_proxies: Vec::new(),
        }
    }
}
