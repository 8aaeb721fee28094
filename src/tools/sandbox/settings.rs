//! The sandbox settings of the configuration: `EXEC_SANDBOX` and
//! `EXEC_NETWORK`, read and checked, and what commands must never reach.

use super::Limits;
use crate::env::ConfigError;

/// `EXEC_SANDBOX`: which confinement to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// The strongest available: Landlock, else Bubblewrap, else none (warned).
    #[default]
    Auto,
    Landlock,
    Bwrap,
    /// Unconfined, chosen explicitly (warned at every start).
    None,
}

/// `EXEC_NETWORK`: whether confined commands have network access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    #[default]
    Allow,
    None,
}

/// The sandbox settings of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    pub network: Network,
    pub limits: Limits,
    /// The gateway's own files and ports, kept from commands at every level.
    pub protect: Protected,
}

/// What commands must never reach, even where the sandbox otherwise lets
/// them: filled from the rest of the configuration (see
/// `Config::from_lookup`), not a setting of its own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Protected {
    /// Files and directories commands may neither read nor write, wherever
    /// they are (inside `/usr`, `/etc` or the workspace too): the env file,
    /// `DATA_DIR`, the database file, the configuration files, systemd's
    /// credentials directory. A path allowed deeper inside one stays allowed
    /// (the workspace inside `DATA_DIR`).
    pub paths: Vec<std::path::PathBuf>,
    /// TCP ports commands may neither connect to nor bind, on any address,
    /// when the network is allowed: the gateway's listeners and the
    /// database's port.
    pub ports: Vec<u16>,
}

impl Protected {
    /// Adds `path` (once).
    pub fn path(&mut self, path: impl Into<std::path::PathBuf>) {
        let path = path.into();
        if !self.paths.contains(&path) {
            self.paths.push(path);
        }
    }

    /// Adds `port` (once; 0, a port picked at bind time, is not known here).
    pub fn port(&mut self, port: u16) {
        if port != 0 && !self.ports.contains(&port) {
            self.ports.push(port);
        }
    }
}

impl SandboxConfig {
    /// Reads `EXEC_SANDBOX` and `EXEC_NETWORK`.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mode =
            match get("EXEC_SANDBOX").map(|v| v.trim().to_ascii_lowercase()) {
                None => SandboxMode::Auto,
                Some(v) => match v.as_str() {
                    "" | "auto" => SandboxMode::Auto,
                    "landlock" => SandboxMode::Landlock,
                    "bwrap" | "bubblewrap" => SandboxMode::Bwrap,
                    "none" => SandboxMode::None,
                    _ => return Err(ConfigError::Invalid {
                        var: "EXEC_SANDBOX",
                        problem: format!("unknown sandbox {v:?}"),
                        fix: "use auto (default: the strongest available), landlock, bwrap or none",
                    }),
                },
            };
        let network = match get("EXEC_NETWORK").map(|v| v.trim().to_ascii_lowercase()) {
            None => Network::Allow,
            Some(v) => match v.as_str() {
                "" | "allow" => Network::Allow,
                "none" => Network::None,
                _ => {
                    return Err(ConfigError::Invalid {
                        var: "EXEC_NETWORK",
                        problem: format!("unknown setting {v:?}"),
                        fix: "use allow (default) or none (recommended: commands get no TCP)",
                    })
                }
            },
        };
        Ok(SandboxConfig {
            mode,
            network,
            limits: Limits::default(),
            protect: Protected::default(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(pairs: &[(&str, &str)]) -> Result<SandboxConfig, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        SandboxConfig::from_lookup(&|k| map.get(k).cloned())
    }

    #[test]
    fn settings_default_to_auto_with_network_and_refuse_unknown_values() {
        let c = read(&[]).unwrap();
        assert_eq!((c.mode, c.network), (SandboxMode::Auto, Network::Allow));
        let c = read(&[("EXEC_SANDBOX", "Bwrap"), ("EXEC_NETWORK", "none")]).unwrap();
        assert_eq!((c.mode, c.network), (SandboxMode::Bwrap, Network::None));
        let e = read(&[("EXEC_SANDBOX", "docker")]).unwrap_err().to_string();
        assert!(e.contains("EXEC_SANDBOX") && e.contains("landlock"), "{e}");
        let e = read(&[("EXEC_NETWORK", "off")]).unwrap_err().to_string();
        assert!(e.contains("EXEC_NETWORK") && e.contains("allow"), "{e}");
    }
}
