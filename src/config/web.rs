//! The operator web console: `WEB_LISTEN` and `WEB_TOKEN` (its cost
//! estimates come from the model catalogue's prices, see `crate::models`).

use super::{ConfigError, Lookup};
use std::net::SocketAddr;
use switchboard_platform::Secret;

pub use crate::web::{WebConfig, MIN_WEB_TOKEN_CHARS};

/// Reads and checks the web console's variables: a listener reachable from
/// other machines without a token is refused.
pub(super) fn web(get: &Lookup<'_>) -> Result<WebConfig, ConfigError> {
    let listen = match get("WEB_LISTEN") {
        None => None,
        Some(raw) => Some(
            raw.parse::<SocketAddr>()
                .map_err(|_| ConfigError::Invalid {
                    var: "WEB_LISTEN",
                    problem: format!("{raw:?} is not an address with a port"),
                    fix: "use IP:PORT, e.g. WEB_LISTEN=127.0.0.1:8080, or unset it",
                })?,
        ),
    };
    let token = get("WEB_TOKEN").map(Secret::new);
    if let Some(t) = &token {
        long_enough(
            "WEB_TOKEN",
            t,
            "use a long random value, e.g. WEB_TOKEN=$(openssl rand -hex 24)",
        )?;
    }
    if let Some(addr) = listen {
        if !addr.ip().is_loopback() && token.is_none() {
            return Err(ConfigError::Invalid {
                var: "WEB_TOKEN",
                problem: format!("WEB_LISTEN={addr} is reachable from other machines and no token is set"),
                fix: "set WEB_TOKEN to a long random value (e.g. $(openssl rand -hex 24)), or listen on 127.0.0.1",
            });
        }
    }
    Ok(WebConfig { listen, token })
}

/// Refuses a token (`var`) shorter than [`MIN_WEB_TOKEN_CHARS`].
pub(super) fn long_enough(
    var: &'static str,
    token: &Secret,
    fix: &'static str,
) -> Result<(), ConfigError> {
    if token.expose().chars().count() < MIN_WEB_TOKEN_CHARS {
        return Err(ConfigError::Invalid {
            var,
            problem: format!("shorter than {MIN_WEB_TOKEN_CHARS} characters"),
            fix,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> Result<WebConfig, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        web(&|k: &str| map.get(k).cloned())
    }

    #[test]
    fn off_by_default_and_loopback_needs_no_token() {
        assert!(parse(&[]).unwrap().listen.is_none());
        let c = parse(&[("WEB_LISTEN", "127.0.0.1:8080")]).unwrap();
        assert!(c.listen.is_some() && c.token.is_none());
    }

    #[test]
    fn a_public_listener_without_a_token_is_refused() {
        let err = parse(&[("WEB_LISTEN", "0.0.0.0:8080")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("WEB_TOKEN"), "{err}");
        let short = parse(&[("WEB_LISTEN", "0.0.0.0:8080"), ("WEB_TOKEN", "short")]);
        assert!(short.is_err());
        let ok = parse(&[
            ("WEB_LISTEN", "0.0.0.0:8080"),
            ("WEB_TOKEN", "0123456789abcdef0123"),
        ])
        .unwrap();
        assert!(format!("{ok:?}").contains("redacted"), "{ok:?}");
    }
}
