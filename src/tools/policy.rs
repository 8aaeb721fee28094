//! Which tools a turn may use: a chat's `allow` and `deny` lists
//! (`CHATS_FILE`). Names are exact, or end in `*` for a prefix
//! (`mcp_github_*`); deny wins over allow.

use std::collections::BTreeSet;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    /// Only these (none: every tool).
    pub allow: Option<BTreeSet<String>>,
    pub deny: BTreeSet<String>,
}

impl ToolPolicy {
    pub fn allows(&self, name: &str) -> bool {
        let hit = |set: &BTreeSet<String>| {
            set.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => p == name,
            })
        };
        !hit(&self.deny) && self.allow.as_ref().is_none_or(hit)
    }

    /// Whether it lets every tool through.
    pub fn is_open(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn allow_deny_and_prefixes() {
        let open = ToolPolicy::default();
        assert!(open.is_open() && open.allows("exec_command"));
        let p = ToolPolicy {
            allow: Some(set(&["read_file", "mcp_github_*"])),
            deny: set(&["mcp_github_delete_repo"]),
        };
        assert!(p.allows("read_file") && p.allows("mcp_github_list_issues"));
        assert!(!p.allows("exec_command") && !p.allows("mcp_github_delete_repo"));
        let deny_only = ToolPolicy {
            allow: None,
            deny: set(&["exec_command", "delegate_to_*"]),
        };
        assert!(deny_only.allows("read_file"));
        assert!(!deny_only.allows("delegate_to_research"));
    }
}
