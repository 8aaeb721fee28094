//! Live reload: `CHATS_FILE`, `MCP_SERVERS_FILE`, `SKILLS_DIR`,
//! `SUBAGENTS_FILE` and the model catalogue re-read on `SIGHUP` and when a
//! file changes (see `watch`). Each file is checked whole first: a bad one
//! is refused (the message names the file, the line and, where the parser
//! gives it, the column) and the settings in force stay; a good one is
//! swapped in whole, so a turn reads one version or the next, never half
//! (sub-agent roles: the `delegate_to_<role>` tools, from the next turn).

use crate::agent::LiveDelegates;
use crate::chats::{ChatBindings, ChatProblem};
use crate::config::Config;
use crate::loaded::{strict_json, Live, Loaded};
use crate::mcp::LiveMcp;
use crate::skills::SkillLibrary;
use crate::store::Store;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use switchboard_platform::Secret;

/// One source of settings the reloader follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    Chats,
    Mcp,
    Skills,
    Subagents,
    Models,
}

impl Source {
    pub(crate) const ALL: [Source; 5] = [
        Source::Chats,
        Source::Mcp,
        Source::Skills,
        Source::Subagents,
        Source::Models,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Source::Chats => "CHATS_FILE",
            Source::Mcp => "MCP_SERVERS_FILE",
            Source::Skills => "SKILLS_DIR",
            Source::Subagents => "SUBAGENTS_FILE",
            Source::Models => "model catalogue",
        }
    }
}

/// The chats as a live value and the reloader following them and the
/// other sources, what was loaded at start recorded.
pub(crate) async fn prepare(
    config: &Config,
    mcp: &Arc<LiveMcp>,
    skills: &Arc<SkillLibrary>,
    delegates: &Arc<LiveDelegates>,
    store: &Store,
) -> (Arc<Live<ChatBindings>>, Arc<Reloader>) {
    let chats = Arc::new(Live::new(config.chats.clone()));
    let reloader = Arc::new(Reloader::new(
        config,
        Arc::clone(&chats),
        Arc::clone(mcp),
        Arc::clone(skills),
        Arc::clone(delegates),
        store.clone(),
    ));
    reloader.record_start(config).await;
    (chats, reloader)
}

/// Every role by name with its tools (for the chats' sub-agent folding).
type RoleTools = Vec<(String, Vec<String>)>;

/// Re-reads the sources and puts good versions in force.
pub(crate) struct Reloader {
    pub(crate) loaded: Arc<Loaded>,
    chats: Arc<Live<ChatBindings>>,
    mcp: Arc<LiveMcp>,
    skills: Arc<SkillLibrary>,
    delegates: Arc<LiveDelegates>,
    /// `SUBAGENTS` as set, applied to each new version of the file.
    offered: Option<String>,
    store: Store,
    paths: BTreeMap<Source, PathBuf>,
    roles: Mutex<RoleTools>,
    /// Values of variables captured at start (the environment is sealed
    /// since), for `${VAR}` in MCP server entries.
    keys: BTreeMap<String, Secret>,
}

impl Reloader {
    pub(crate) fn new(
        config: &Config,
        chats: Arc<Live<ChatBindings>>,
        mcp: Arc<LiveMcp>,
        skills: Arc<SkillLibrary>,
        delegates: Arc<LiveDelegates>,
        store: Store,
    ) -> Reloader {
        let mut paths = BTreeMap::new();
        let set = [
            (Source::Chats, config.chats_file.clone()),
            (Source::Mcp, config.mcp_servers_file.clone()),
            (Source::Skills, Some(config.skills_dir.clone())),
            (Source::Subagents, config.subagents_file.clone()),
        ];
        for (source, path) in set {
            if let Some(path) = path {
                paths.insert(source, path);
            }
        }
        let file_roles = config
            .subagents_file
            .as_deref()
            .and_then(|p| crate::agent::load_roles(p).ok())
            .map(|(roles, _)| roles)
            .unwrap_or_default();
        Reloader {
            loaded: Arc::new(Loaded::in_dir(&config.data_dir)),
            chats,
            mcp,
            skills,
            delegates,
            offered: config.subagents_setting.clone(),
            store,
            paths,
            roles: Mutex::new(role_tools(file_roles)),
            keys: config.model_keys.clone(),
        }
    }

    /// The file or directory of `source`, when it is set.
    pub(crate) fn path(&self, source: Source) -> Option<&Path> {
        self.paths.get(&source).map(PathBuf::as_path)
    }

    /// Records what was loaded at start.
    pub(crate) async fn record_start(&self, config: &Config) {
        let chats = self.chats.get();
        self.loaded.loaded(
            Source::Chats.label(),
            self.path(Source::Chats),
            format!("{} chat(s)", chats.len()),
        );
        self.loaded.loaded(
            Source::Mcp.label(),
            self.path(Source::Mcp),
            format!("{} server(s)", self.mcp.clients().servers().len()),
        );
        self.loaded.loaded(
            Source::Skills.label(),
            self.path(Source::Skills),
            format!("{} skill(s)", self.skills.book().len()),
        );
        let roles = config.subagents.len();
        self.loaded.loaded(
            Source::Subagents.label(),
            self.path(Source::Subagents),
            format!("{roles} role(s) offered"),
        );
        self.models("start").await;
    }

    /// Re-reads `source`; `trigger` says why (`SIGHUP`, `file change`).
    pub(crate) async fn reload(&self, source: Source, trigger: &str) {
        match source {
            Source::Chats => self.chats(trigger),
            Source::Mcp => self.mcp(trigger).await,
            Source::Skills => self.skills(trigger).await,
            Source::Subagents => self.subagents(trigger),
            Source::Models => self.models(trigger).await,
        }
    }

    fn refuse(&self, source: Source, trigger: &str, message: String) {
        tracing::warn!(source = source.label(), trigger, refusal = %message, "reload refused; the settings in force stay");
        self.loaded.refused(source.label(), message);
    }

    fn chats(&self, trigger: &str) {
        let Some(path) = self.path(Source::Chats) else {
            return;
        };
        let roles = self
            .roles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let new = match check_chats(path, &roles) {
            Ok(new) => new,
            Err(message) => return self.refuse(Source::Chats, trigger, message),
        };
        let old = self.chats.get();
        let (added, removed, changed) = diff_chats(&old, &new);
        let count = new.len();
        self.chats.set(new);
        self.loaded.loaded(
            Source::Chats.label(),
            Some(path),
            format!("{count} chat(s)"),
        );
        tracing::info!(
            source = "CHATS_FILE",
            trigger,
            chats = count,
            added,
            removed,
            changed,
            "settings reloaded"
        );
    }

    async fn mcp(&self, trigger: &str) {
        let Some(path) = self.path(Source::Mcp) else {
            return;
        };
        let keys = &self.keys;
        let lookup = |k: &str| {
            keys.get(k)
                .map(|s| s.expose().to_owned())
                .or_else(|| std::env::var(k).ok())
        };
        let defs = match check_mcp(path, lookup) {
            Ok(defs) => defs,
            Err(message) => return self.refuse(Source::Mcp, trigger, message),
        };
        crate::secrets::register(defs.iter().flat_map(|d| d.secrets.iter().cloned()));
        let change = self.mcp.apply(&defs).await;
        self.loaded.loaded(
            Source::Mcp.label(),
            Some(path),
            format!("{} server(s)", change.running),
        );
        tracing::info!(
            source = "MCP_SERVERS_FILE",
            trigger,
            servers = change.running,
            added = ?change.added,
            removed = ?change.removed,
            restarted = ?change.restarted,
            "settings reloaded"
        );
    }

    async fn skills(&self, trigger: &str) {
        let library = Arc::clone(&self.skills);
        let changed = tokio::task::spawn_blocking(move || library.refresh())
            .await
            .unwrap_or(false);
        let count = self.skills.book().len();
        self.loaded.loaded(
            Source::Skills.label(),
            self.path(Source::Skills),
            format!("{count} skill(s)"),
        );
        tracing::info!(
            source = "SKILLS_DIR",
            trigger,
            skills = count,
            changed,
            "settings reloaded"
        );
    }

    /// The roles are checked whole, `SUBAGENTS` applied to them, and the
    /// `delegate_to_<role>` tools rebuilt (used from the next turn); their
    /// tools also serve the chats' folding.
    fn subagents(&self, trigger: &str) {
        let Some(path) = self.path(Source::Subagents) else {
            return;
        };
        let checked = check_roles(path).and_then(|roles| {
            crate::config::offered_roles(self.offered.as_deref(), &roles)
                .map(|offered| (roles, offered))
                .map_err(|e| format!("SUBAGENTS_FILE ({}): {e}", path.display()))
        });
        let (roles, offered) = match checked {
            Ok(both) => both,
            Err(message) => return self.refuse(Source::Subagents, trigger, message),
        };
        let count = roles.len();
        *self.roles.lock().unwrap_or_else(PoisonError::into_inner) = role_tools(roles);
        self.delegates.offer(&offered);
        self.loaded.loaded(
            Source::Subagents.label(),
            Some(path),
            format!("{} role(s) offered", offered.len()),
        );
        tracing::info!(
            source = "SUBAGENTS_FILE",
            trigger,
            roles = count,
            offered = ?self.delegates.offered(),
            "settings reloaded"
        );
    }

    /// The catalogue lives in the database and is read each turn; a reload
    /// re-counts it.
    async fn models(&self, trigger: &str) {
        match self.store.models().await {
            Ok(rows) => {
                let default = rows
                    .iter()
                    .find(|r| r.role.as_deref() == Some("default"))
                    .map_or("the LLM_* model".to_owned(), |r| r.name.clone());
                let items = format!("{} model(s), default {default}", rows.len());
                self.loaded.loaded(Source::Models.label(), None, items);
                if trigger != "start" {
                    tracing::info!(
                        source = "model catalogue",
                        trigger,
                        models = rows.len(),
                        "settings reloaded"
                    );
                }
            }
            Err(e) => self.refuse(
                Source::Models,
                trigger,
                format!("the database did not answer: {e}"),
            ),
        }
    }
}

/// The built-in roles and `file`'s, with their tools.
fn role_tools(file: Vec<crate::agent::Role>) -> RoleTools {
    crate::agent::builtin_roles()
        .into_iter()
        .chain(file)
        .map(|r| (r.name, r.tools))
        .collect()
}

/// A problem that skipped something (not an unknown field, which is only named).
fn skips(problem: &str) -> bool {
    !problem.ends_with("(ignored)")
}

/// The line where `needle` (an entry's key) first appears in `text`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    let at = text.find(needle)?;
    Some(text[..at].matches('\n').count() + 1)
}

/// Where an entry is, for a refusal: `line N: ` or nothing.
fn at_entry(path: &Path, key: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| line_of(&text, &format!("\"{key}\"")))
        .map_or_else(String::new, |n| format!("line {n}: "))
}

/// `CHATS_FILE` checked whole: valid JSON, and every entry usable.
pub(crate) fn check_chats(path: &Path, roles: &RoleTools) -> Result<ChatBindings, String> {
    strict_json("CHATS_FILE", path)?;
    let roles: Vec<(&str, Vec<&str>)> = roles
        .iter()
        .map(|(n, t)| (n.as_str(), t.iter().map(String::as_str).collect()))
        .collect();
    let (bindings, problems) = crate::chats::load(path, &roles);
    match problems.iter().find(|p| skips(&p.problem)) {
        None => Ok(bindings),
        Some(ChatProblem { target, problem }) => Err(format!(
            "CHATS_FILE ({}): {}entry {target}: {problem}",
            path.display(),
            at_entry(path, target)
        )),
    }
}

/// `MCP_SERVERS_FILE` checked whole: valid JSON, every entry usable.
fn check_mcp(
    path: &Path,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<crate::mcp::McpServerDef>, String> {
    strict_json("MCP_SERVERS_FILE", path)?;
    let (defs, problems) = crate::mcp::load_mcp_servers(path, lookup);
    match problems.iter().find(|p| skips(&p.problem)) {
        None => Ok(defs),
        Some(p) => Err(format!(
            "MCP_SERVERS_FILE ({}): {}server {}: {}",
            path.display(),
            at_entry(path, &p.server),
            p.server,
            p.problem
        )),
    }
}

/// `SUBAGENTS_FILE` checked whole.
fn check_roles(path: &Path) -> Result<Vec<crate::agent::Role>, String> {
    strict_json("SUBAGENTS_FILE", path)?;
    let (roles, problems) = crate::agent::load_roles(path)
        .map_err(|e| format!("SUBAGENTS_FILE ({}): {e}", path.display()))?;
    match problems.first() {
        None => Ok(roles),
        Some(p) => Err(format!("SUBAGENTS_FILE ({}): {p}", path.display())),
    }
}

/// Entries added, removed and changed between two versions (by their key).
fn diff_chats(old: &ChatBindings, new: &ChatBindings) -> (usize, usize, usize) {
    let index = |b: &ChatBindings| -> BTreeMap<String, crate::chats::ChatSettings> {
        b.entries().map(|c| (c.target.clone(), c.clone())).collect()
    };
    let (old, new) = (index(old), index(new));
    let added = new.keys().filter(|k| !old.contains_key(*k)).count();
    let removed = old.keys().filter(|k| !new.contains_key(*k)).count();
    let changed = new
        .iter()
        .filter(|(k, v)| old.get(*k).is_some_and(|o| o != *v))
        .count();
    (added, removed, changed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn roles() -> RoleTools {
        role_tools(Vec::new())
    }

    #[test]
    fn a_skipped_entry_refuses_the_file_by_its_line_and_an_unknown_field_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chats.json");
        std::fs::write(
            &path,
            "{\"chats\": {\n  \"console:1\": {\"colour\": \"red\"},\n  \"console:2\": {\"verbosity\": \"loud\"}\n}}",
        )
        .unwrap();
        let message = check_chats(&path, &roles()).unwrap_err();
        assert!(message.contains("line 3: entry console:2"), "{message}");
        std::fs::write(&path, "{\"chats\": {\"console:1\": {\"colour\": \"red\"}}}").unwrap();
        assert_eq!(check_chats(&path, &roles()).unwrap().len(), 1);
    }

    #[test]
    fn changes_are_counted_by_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chats.json");
        std::fs::write(
            &path,
            r#"{"chats": {"console:1": {"free_response": true}, "console:2": {}}}"#,
        )
        .unwrap();
        let old = check_chats(&path, &roles()).unwrap();
        std::fs::write(
            &path,
            r#"{"chats": {"console:1": {"free_response": false}, "console:3": {}, "console:4": {}}}"#,
        )
        .unwrap();
        let new = check_chats(&path, &roles()).unwrap();
        assert_eq!(diff_chats(&old, &new), (2, 1, 1));
    }
}
