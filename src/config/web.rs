//! The operator web console: `WEB_LISTEN`, `WEB_TOKEN`, `WEB_REAUTH_SECS`
//! and `WEB_TRUSTED_PROXY` (its cost estimates come from the model
//! catalogue's prices, see `crate::models`).

use super::{ConfigError, Lookup};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use switchboard_platform::Secret;

pub use crate::web::{WebConfig, MIN_WEB_TOKEN_CHARS};

/// The longest `WEB_REAUTH_SECS`: a day.
const MAX_REAUTH_SECS: u64 = 86_400;

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
    let reauth =
        match get("WEB_REAUTH_SECS").map(|v| v.trim().to_owned()) {
            None => crate::web::DEFAULT_REAUTH,
            Some(raw) => match raw.parse::<u64>() {
                Ok(secs) if secs <= MAX_REAUTH_SECS => Duration::from_secs(secs),
                _ => return Err(ConfigError::Invalid {
                    var: "WEB_REAUTH_SECS",
                    problem: format!(
                        "{raw:?} is not a number of seconds from 0 to {MAX_REAUTH_SECS}"
                    ),
                    fix: "use e.g. WEB_REAUTH_SECS=300 (0: the token is asked with every approval)",
                }),
            },
        };
    Ok(WebConfig {
        listen,
        token,
        reauth,
        trusted_proxies: trusted_proxies(get("WEB_TRUSTED_PROXY"))?,
    })
}

/// `WEB_TRUSTED_PROXY`: IP addresses separated by commas.
fn trusted_proxies(raw: Option<String>) -> Result<Vec<IpAddr>, ConfigError> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    raw.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<IpAddr>().map_err(|_| ConfigError::Invalid {
                var: "WEB_TRUSTED_PROXY",
                problem: format!("{p:?} is not an IP address"),
                fix: "list the proxies' IP addresses, e.g. WEB_TRUSTED_PROXY=127.0.0.1,10.0.0.5",
            })
        })
        .collect()
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

    #[test]
    fn reauth_window_and_trusted_proxies_are_read_and_checked() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.reauth, Duration::from_secs(300));
        assert!(c.trusted_proxies.is_empty());
        let c = parse(&[
            ("WEB_REAUTH_SECS", "0"),
            ("WEB_TRUSTED_PROXY", "127.0.0.1, ::1"),
        ])
        .unwrap();
        assert_eq!(c.reauth, Duration::ZERO);
        assert_eq!(c.trusted_proxies.len(), 2);
        for bad in [
            ("WEB_REAUTH_SECS", "soon"),
            ("WEB_REAUTH_SECS", "999999"),
            ("WEB_TRUSTED_PROXY", "proxy.local"),
        ] {
            let err = parse(&[bad]).unwrap_err().to_string();
            assert!(err.contains(bad.0), "{err}");
        }
    }
}
