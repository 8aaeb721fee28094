//! The gateway's basic settings: who may talk to it (`ACCESS_POLICY`, the
//! allowed users), how it logs (`LOG_FORMAT`), its time zone and its health
//! endpoint's address.

use super::{parse_ids, ConfigError, LogFormat};
use crate::gateway::AccessPolicy;
use std::collections::{HashMap, HashSet};
use switchboard_platform::{Platform, UserId};

/// `ACCESS_POLICY`: pairing (default), allowlist or open.
pub(super) fn access_policy(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<AccessPolicy, ConfigError> {
    match get("ACCESS_POLICY").as_deref() {
        None | Some("pairing") => Ok(AccessPolicy::Pairing),
        Some("allowlist") => Ok(AccessPolicy::Allowlist),
        Some("open") => Ok(AccessPolicy::Open),
        Some(other) => Err(ConfigError::Invalid {
            var: "ACCESS_POLICY",
            problem: format!("unknown policy {other:?}"),
            fix: "use pairing (default), allowlist or open",
        }),
    }
}

/// `TELEGRAM_ALLOWED_USERS` and `DISCORD_ALLOWED_USERS`, by platform.
pub(super) fn allowed_users(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<HashMap<Platform, HashSet<UserId>>, ConfigError> {
    let mut allowed = HashMap::new();
    for (platform, var) in [
        (Platform::Telegram, "TELEGRAM_ALLOWED_USERS"),
        (Platform::Discord, "DISCORD_ALLOWED_USERS"),
    ] {
        allowed.insert(platform, parse_ids(var, get(var))?);
    }
    Ok(allowed)
}

/// `LOG_FORMAT`: pretty (default) or json.
pub(super) fn log_format(get: &impl Fn(&str) -> Option<String>) -> Result<LogFormat, ConfigError> {
    match get("LOG_FORMAT").as_deref() {
        None | Some("pretty") => Ok(LogFormat::Pretty),
        Some("json") => Ok(LogFormat::Json),
        Some(other) => Err(ConfigError::Invalid {
            var: "LOG_FORMAT",
            problem: format!("unknown format {other:?}"),
            fix: "use pretty (default) or json",
        }),
    }
}

/// `TIMEZONE`: an IANA name, UTC by default.
pub(super) fn timezone(get: &impl Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    let timezone = get("TIMEZONE").unwrap_or_else(|| "UTC".into());
    if timezone.parse::<chrono_tz::Tz>().is_err() {
        return Err(ConfigError::Invalid {
            var: "TIMEZONE",
            problem: format!("unknown time zone {timezone:?}"),
            fix: "use an IANA name such as Europe/Berlin or UTC",
        });
    }
    Ok(timezone)
}

/// `HEALTH_LISTEN`: the health endpoint's address, off when unset.
pub(super) fn health_listen(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<std::net::SocketAddr>, ConfigError> {
    get("HEALTH_LISTEN")
        .map(|raw| {
            raw.parse().map_err(|_| ConfigError::Invalid {
                var: "HEALTH_LISTEN",
                problem: format!("{raw:?} is not an address with a port"),
                fix: "use IP:PORT, e.g. HEALTH_LISTEN=127.0.0.1:9464, or unset it",
            })
        })
        .transpose()
}
