//! The per-user caps and the sub-agent roles offered.

use super::{number, Lookup};
use crate::env::ConfigError;
use std::time::Duration;

/// The per-user caps.
pub(super) fn caps(get: &Lookup<'_>) -> Result<crate::caps::UserCaps, ConfigError> {
    Ok(crate::caps::UserCaps {
        max_tasks: number(&get, "MAX_TASKS_PER_USER")?
            .unwrap_or(crate::caps::DEFAULT_MAX_TASKS_PER_USER),
        max_schedules: number(&get, "MAX_SCHEDULES_PER_USER")?
            .unwrap_or(crate::caps::DEFAULT_MAX_SCHEDULES_PER_USER),
        turn_deadline: number(&get, "TURN_DEADLINE_SECS")?
            .map(Duration::from_secs)
            .unwrap_or(crate::caps::DEFAULT_TURN_DEADLINE),
        approval_presses_per_minute: number(&get, "APPROVAL_PRESSES_PER_MINUTE")?
            .unwrap_or(crate::caps::DEFAULT_APPROVAL_PRESSES_PER_MINUTE),
    })
}

/// `SUBAGENTS`: role names, comma-separated; `none` for no sub-agents.
/// Unset: `research` and `analysis`, and every role of `SUBAGENTS_FILE`.
pub(super) fn subagents(
    raw: Option<String>,
    file_roles: &[crate::agent::Role],
) -> Result<Vec<crate::agent::Role>, ConfigError> {
    let raw = raw.unwrap_or_else(|| {
        let mut names = vec!["research".to_owned(), "analysis".to_owned()];
        names.extend(file_roles.iter().map(|r| r.name.clone()));
        names.dedup();
        names.join(",")
    });
    if raw.trim() == "none" {
        return Ok(Vec::new());
    }
    raw.split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|name| {
            crate::agent::find_role(name, file_roles).ok_or_else(|| ConfigError::Invalid {
                var: "SUBAGENTS",
                problem: format!("{name:?} is not a role"),
                fix: "list roles from research, analysis, operations or SUBAGENTS_FILE (comma-separated), or none",
            })
        })
        .collect()
}
