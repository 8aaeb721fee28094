//! An adapter's connection to its platform, as the operator sees it.

use std::sync::Mutex;
use std::time::SystemTime;

/// Where an adapter's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Not connected yet.
    Starting,
    /// Receiving from the platform.
    Connected,
    /// The last attempt failed; retrying.
    Reconnecting,
    /// The receive loop ended.
    Stopped,
}

impl LinkState {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkState::Starting => "starting",
            LinkState::Connected => "connected",
            LinkState::Reconnecting => "reconnecting",
            LinkState::Stopped => "stopped",
        }
    }
}

/// A snapshot of a [`Link`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkStatus {
    pub state: LinkState,
    /// The last failure (already scrubbed of tokens by the adapter) and when.
    pub last_error: Option<(SystemTime, String)>,
}

impl LinkStatus {
    /// An adapter with no remote connection (the console, a test channel).
    pub fn local() -> LinkStatus {
        LinkStatus {
            state: LinkState::Connected,
            last_error: None,
        }
    }
}

/// Shared connection state an adapter updates as it connects and fails.
#[derive(Debug)]
pub struct Link(Mutex<LinkStatus>);

impl Default for Link {
    fn default() -> Link {
        Link(Mutex::new(LinkStatus {
            state: LinkState::Starting,
            last_error: None,
        }))
    }
}

impl Link {
    fn update(&self, f: impl FnOnce(&mut LinkStatus)) {
        f(&mut self.0.lock().unwrap_or_else(|p| p.into_inner()));
    }

    pub fn connected(&self) {
        self.update(|s| s.state = LinkState::Connected);
    }

    /// A failed attempt (the adapter retries); `error` must hold no secret.
    pub fn failed(&self, error: impl std::fmt::Display) {
        let error = error.to_string();
        self.update(|s| {
            s.state = LinkState::Reconnecting;
            s.last_error = Some((SystemTime::now(), error));
        });
    }

    pub fn stopped(&self) {
        self.update(|s| s.state = LinkState::Stopped);
    }

    pub fn status(&self) -> LinkStatus {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_kept_after_reconnecting() {
        let link = Link::default();
        assert_eq!(link.status().state, LinkState::Starting);
        link.failed("timed out");
        assert_eq!(link.status().state, LinkState::Reconnecting);
        link.connected();
        let status = link.status();
        assert_eq!(status.state, LinkState::Connected);
        assert_eq!(status.last_error.map(|e| e.1).as_deref(), Some("timed out"));
    }
}
