//! The keys catalogue entries name by variable: read from the environment
//! at start, before the secret variables are removed from it (see
//! [`crate::secrets::seal_process`]); the values are secrets.

use std::collections::BTreeMap;
use switchboard_platform::Secret;

/// Every variable of this process whose name says it holds a key or token,
/// or whose value is a URL with credentials (a catalogue model's `url_env`).
pub fn capture() -> BTreeMap<String, Secret> {
    std::env::vars()
        .filter(|(name, value)| {
            !value.trim().is_empty()
                && (crate::secrets::is_secret_name(name)
                    || !crate::secrets::url_secrets(value).is_empty())
        })
        .map(|(name, value)| (name, Secret::new(value.trim())))
        .collect()
}
