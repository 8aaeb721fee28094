//! What the exec sandbox keeps from commands at every level, gathered from
//! the rest of the configuration: the gateway's files (`DATA_DIR`, the
//! database, the files the configuration names, systemd's credentials; the
//! env file is added by whoever read it) and its ports (its listeners and
//! the database's).

use super::{Config, Lookup};
use crate::tools::Protected;
use std::path::{Path, PathBuf};

/// The variables naming configuration files, some holding secrets
/// (`MCP_SERVERS_FILE`'s server environments, `HTTP_TOOLS_FILE`'s
/// credentials), all the operator's, none a command's business.
const FILES: &[&str] = &[
    "CHATS_FILE",
    "MCP_SERVERS_FILE",
    "SUBAGENTS_FILE",
    "HTTP_TOOLS_FILE",
    "INTENT_RULES_FILE",
];

/// PostgreSQL's port when the URL and `PGPORT` name none.
const POSTGRES_PORT: u16 = 5432;

impl Config {
    /// Keeps `path` (an env file this configuration was read from) from the
    /// commands the gateway runs.
    pub fn keep_from_commands(&mut self, path: impl Into<PathBuf>) {
        self.exec_sandbox.protect.path(path);
    }
}

/// The protected paths and ports of `config` (its sandbox's `protect`).
pub(super) fn protected(config: &Config, get: &Lookup<'_>) -> Protected {
    let mut p = Protected::default();
    p.path(&config.data_dir);
    for var in FILES {
        if let Some(file) = get(var) {
            p.path(file);
        }
    }
    // Script tools' manifests; the scripts themselves stay readable (a
    // script reads its own directory).
    if let Some(dir) = &config.script_tools_dir {
        for manifest in manifests(dir) {
            p.path(manifest);
        }
    }
    // systemd's LoadCredential= copies (readable by the gateway's user).
    if let Some(dir) = get("CREDENTIALS_DIRECTORY") {
        p.path(dir);
    }
    database(&config.database_url, get, &mut p);
    let listeners = [
        config.web.listen,
        config.health_listen,
        config.mcp_http.as_ref().map(|h| h.listen),
        config
            .platforms
            .telegram
            .as_ref()
            .and_then(|t| t.webhook.as_ref())
            .map(|w| w.listen),
    ];
    for addr in listeners.into_iter().flatten() {
        p.port(addr.port());
    }
    p
}

/// The database's file (SQLite, with its journal files) or its port and
/// socket directory (PostgreSQL).
fn database(url: &str, get: &Lookup<'_>, p: &mut Protected) {
    if let Some(file) = crate::store::sqlite_path(url) {
        if !file.as_os_str().is_empty() {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = file.clone().into_os_string();
                name.push(suffix);
                p.path(name);
            }
        }
        return;
    }
    let Ok(parsed) = url::Url::parse(url) else {
        return;
    };
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return;
    }
    let port = parsed
        .port()
        .or_else(|| get("PGPORT").and_then(|v| v.parse().ok()))
        .unwrap_or(POSTGRES_PORT);
    p.port(port);
    // `?host=/run/postgresql` (or `PGHOST` with no host in the URL): the
    // Unix socket's directory.
    for (key, value) in parsed.query_pairs() {
        if key == "host" && value.starts_with('/') {
            p.path(value.into_owned());
        }
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        if let Some(dir) = get("PGHOST").filter(|h| h.starts_with('/')) {
            p.path(dir);
        }
    }
}

/// The `*.json` manifests in `dir`.
fn manifests(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn config(pairs: &[(&str, &str)]) -> crate::config::Config {
        let mut map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        map.insert("LLM_BASE_URL".into(), "http://x/v1".into());
        map.insert("LLM_MODEL".into(), "m".into());
        crate::config::Config::from_lookup(|k| map.get(k).cloned()).unwrap()
    }

    #[test]
    fn the_gateway_files_and_ports_are_protected() {
        let c = config(&[
            ("DATA_DIR", "/srv/sb"),
            (
                "DATABASE_URL",
                "postgres://u:pw@db.internal/sb?host=/run/pg",
            ),
            ("WEB_LISTEN", "127.0.0.1:8080"),
            ("HEALTH_LISTEN", "127.0.0.1:9464"),
            ("CHATS_FILE", "/etc/sb/chats.json"),
            (
                "CREDENTIALS_DIRECTORY",
                "/run/credentials/switchboard.service",
            ),
        ]);
        let p = &c.exec_sandbox.protect;
        let mut ports = p.ports.clone();
        ports.sort_unstable();
        assert_eq!(ports, [5432, 8080, 9464]);
        for path in [
            "/srv/sb",
            "/run/pg",
            "/etc/sb/chats.json",
            "/run/credentials/switchboard.service",
        ] {
            assert!(p.paths.contains(&PathBuf::from(path)), "{path}: {p:?}");
        }
        // SQLite: the file and its journals; no port.
        let c = config(&[("DATABASE_URL", "sqlite:///var/db/sb.db?mode=rwc")]);
        let p = &c.exec_sandbox.protect;
        assert!(p.ports.is_empty());
        assert!(p.paths.contains(&PathBuf::from("/var/db/sb.db-wal")));
        let c = config(&[("DATABASE_URL", "postgres://h:6543/x")]);
        assert_eq!(c.exec_sandbox.protect.ports, [6543]);
    }
}
