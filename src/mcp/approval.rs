//! Which MCP tools are offered and which need an approval card: per server
//! `approval` (`always` by default), per-tool overrides, `allow`/`deny` lists;
//! `hints` trusts only a `readOnlyHint: true` annotation.

use std::collections::HashMap;

/// When a tool's call needs a person's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Approval {
    /// Every call shows a card (the default).
    #[default]
    Always,
    /// Calls run without a card.
    Never,
    /// No card only for tools annotated `readOnlyHint: true`.
    Hints,
}

/// A server's approval and exposure rules.
#[derive(Debug, Clone, Default)]
pub struct ApprovalPolicy {
    pub default: Approval,
    /// Per-tool overrides, by the server's own tool name.
    pub tools: HashMap<String, Approval>,
    /// When set, only these tools are offered.
    pub allow: Option<Vec<String>>,
    /// Never offered.
    pub deny: Vec<String>,
}

impl ApprovalPolicy {
    /// Whether the tool (the server's name for it) is offered to the model.
    pub fn offers(&self, tool: &str) -> bool {
        let allowed = self
            .allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == tool));
        allowed && !self.deny.iter().any(|d| d == tool)
    }

    /// Whether a call needs an approval card; `read_only` is the tool's
    /// `readOnlyHint` annotation.
    pub fn requires_approval(&self, tool: &str, read_only: Option<bool>) -> bool {
        match self.tools.get(tool).copied().unwrap_or(self.default) {
            Approval::Always => true,
            Approval::Never => false,
            Approval::Hints => read_only != Some(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_trust_only_a_read_only_annotation_and_overrides_win() {
        let mut p = ApprovalPolicy {
            default: Approval::Hints,
            ..ApprovalPolicy::default()
        };
        assert!(!p.requires_approval("echo", Some(true)));
        assert!(p.requires_approval("wipe", Some(false)));
        assert!(p.requires_approval("unknown", None));
        p.tools.insert("echo".into(), Approval::Always);
        p.tools.insert("wipe".into(), Approval::Never);
        assert!(p.requires_approval("echo", Some(true)));
        assert!(!p.requires_approval("wipe", Some(false)));
        assert!(ApprovalPolicy::default().requires_approval("echo", Some(true)));
    }

    #[test]
    fn allow_and_deny_lists_choose_the_offered_tools() {
        let mut p = ApprovalPolicy::default();
        assert!(p.offers("anything"));
        p.allow = Some(vec!["echo".into(), "wipe".into()]);
        p.deny = vec!["wipe".into()];
        assert!(p.offers("echo"));
        assert!(!p.offers("wipe"));
        assert!(!p.offers("other"));
    }
}
