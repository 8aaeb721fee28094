//! Configuration-like state — the portfolio ledger, schedules, background
//! tasks, "always allow" rules — read now for a turn that touches it, so the
//! model acts on the live data rather than on what a summary or an old
//! message says (seeds/003: re-read, do not trust the summary). What a turn
//! touches is decided by the planner's check before the turn (`planner`):
//! the tools of the open plan's steps, and the user's words.

use crate::domain::SessionKey;
use crate::gateway::Inner;
use crate::store::{MemoryOwner, SessionId};
use regex::Regex;
use std::sync::LazyLock;

/// Items listed per kind at most.
const MAX_ITEMS: usize = 20;

static PORTFOLIO: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(buy|bought|sell|sold|add|remove|set|update|change|rebalance|record)\b.{0,60}\b(portfolio|holdings?|positions?|shares?|units?|stocks?|ledger)\b|买入|卖出|加仓|减仓|调仓|清仓").ok()
});
static SCHEDULES: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(schedules?|reminders?|remind me|every (day|week|morning|hour)|cancel|stop|change|move|reschedule)\b.{0,60}\b(schedules?|reminders?|tasks?|jobs?|daily|weekly|report)\b|\b(schedule|remind)\b|提醒|定时|每天|每周").ok()
});
static RULES: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(always[- ]allow|approval rules?|auto-?approve|revoke)\b|自动批准|规则").ok()
});

fn hit(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(text))
}

/// The kinds of live state a turn touches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::gateway) struct Touches {
    pub portfolio: bool,
    pub schedules: bool,
    pub tasks: bool,
    pub rules: bool,
}

impl Touches {
    /// What a request asks to change, from the user's words.
    pub fn of_request(text: &str) -> Touches {
        Touches {
            portfolio: hit(&PORTFOLIO, text),
            schedules: hit(&SCHEDULES, text),
            tasks: false,
            rules: hit(&RULES, text),
        }
    }

    /// What a tool reads or changes, by its name.
    pub fn of_tool(name: &str) -> Touches {
        Touches {
            portfolio: matches!(name, "portfolio" | "update_portfolio"),
            schedules: name == "schedule",
            tasks: matches!(name, "cancel_task" | "check_background_tasks"),
            rules: false,
        }
    }

    pub fn or(self, other: Touches) -> Touches {
        Touches {
            portfolio: self.portfolio || other.portfolio,
            schedules: self.schedules || other.schedules,
            tasks: self.tasks || other.tasks,
            rules: self.rules || other.rules,
        }
    }

    pub fn any(self) -> bool {
        self.portfolio || self.schedules || self.tasks || self.rules
    }
}

/// The live state of what a turn `touches`, read now; `None` for nothing.
pub(in crate::gateway) async fn section(
    inner: &Inner,
    key: &SessionKey,
    session: &SessionId,
    touches: Touches,
) -> Option<String> {
    let mut parts = Vec::new();
    if touches.portfolio {
        parts.extend(portfolio(inner, key).await);
    }
    if touches.schedules {
        parts.extend(schedules(inner, session).await);
    }
    if touches.tasks {
        parts.extend(tasks(inner, session).await);
    }
    if touches.rules {
        parts.extend(rules(inner, key).await);
    }
    (!parts.is_empty()).then(|| {
        format!(
            "[Live state — read just now for this request; where a summary or an earlier message says otherwise, this is right]\n{}",
            parts.join("\n")
        )
    })
}

/// The conversation's background tasks, latest first, read now.
async fn tasks(inner: &Inner, session: &SessionId) -> Option<String> {
    match inner
        .store
        .tasks()
        .of_session(session, MAX_ITEMS as u32)
        .await
    {
        Ok(list) if list.is_empty() => {
            Some("Background tasks in this conversation: none.".to_owned())
        }
        Ok(list) => {
            let lines: Vec<String> = list
                .iter()
                .map(|t| format!("- {} {} ({})", t.id.short(), t.tool_name, t.status.as_str()))
                .collect();
            Some(format!(
                "Background tasks in this conversation:\n{}",
                lines.join("\n")
            ))
        }
        Err(e) => {
            tracing::warn!(error = %e, "live state: tasks unavailable");
            None
        }
    }
}

/// The user's holdings, read now; `None` when unavailable.
async fn portfolio(inner: &Inner, key: &SessionKey) -> Option<String> {
    let owner = MemoryOwner::new(key.platform, key.user);
    match inner.store.portfolio(owner).await {
        Ok(positions) if positions.is_empty() => Some("Portfolio: no holdings.".to_owned()),
        Ok(positions) => {
            let lines: Vec<String> = positions
                .iter()
                .take(MAX_ITEMS)
                .map(|p| {
                    format!(
                        "- {} {} at average cost {} {}",
                        p.quantity,
                        p.symbol,
                        p.average_cost(),
                        p.currency
                    )
                })
                .collect();
            Some(format!("Portfolio holdings:\n{}", lines.join("\n")))
        }
        Err(e) => {
            tracing::warn!(error = %e, "live state: portfolio unavailable");
            None
        }
    }
}

/// The conversation's active schedules, read now; `None` when unavailable.
async fn schedules(inner: &Inner, session: &SessionId) -> Option<String> {
    match inner.store.schedules().of_session(session).await {
        Ok(list) => {
            let active: Vec<String> = list
                .iter()
                .filter(|s| s.active)
                .take(MAX_ITEMS)
                .map(|s| {
                    format!(
                        "- {} ({} {}): {}",
                        s.id.short(),
                        s.kind,
                        s.spec,
                        crate::text::clip(&s.prompt, 80)
                    )
                })
                .collect();
            Some(if active.is_empty() {
                "Schedules in this conversation: none.".to_owned()
            } else {
                format!("Schedules in this conversation:\n{}", active.join("\n"))
            })
        }
        Err(e) => {
            tracing::warn!(error = %e, "live state: schedules unavailable");
            None
        }
    }
}

/// The user's "always allow" rules, read now; `None` when unavailable.
async fn rules(inner: &Inner, key: &SessionKey) -> Option<String> {
    match inner.store.approvals().rules(key.platform, key.user).await {
        Ok(rules) => {
            let lines: Vec<String> = rules
                .iter()
                .take(MAX_ITEMS)
                .map(|r| {
                    format!(
                        "- {} for {}: {}",
                        r.id.short(),
                        r.tool_name,
                        crate::text::clip(&r.pattern, 80)
                    )
                })
                .collect();
            Some(if lines.is_empty() {
                "Your \"always allow\" rules: none.".to_owned()
            } else {
                format!("Your \"always allow\" rules:\n{}", lines.join("\n"))
            })
        }
        Err(e) => {
            tracing::warn!(error = %e, "live state: rules unavailable");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requests_to_change_such_state_trigger_it() {
        assert!(Touches::of_request("cancel the daily report").schedules);
        assert!(!Touches::of_request("hello").any());
        assert!(
            Touches::of_tool("check_background_tasks").tasks
                && !Touches::of_tool("read_file").any()
        );
        assert!(hit(&PORTFOLIO, "sell 5 shares of AAPL"));
        assert!(hit(&PORTFOLIO, "加仓 茅台"));
        assert!(!hit(&PORTFOLIO, "what is a stock?"));
        assert!(hit(&SCHEDULES, "cancel the daily report"));
        assert!(hit(&SCHEDULES, "remind me at 9"));
        assert!(!hit(&SCHEDULES, "hello there"));
        assert!(hit(&RULES, "revoke my always-allow rule for git"));
        assert!(!hit(&RULES, "how are you"));
    }
}
