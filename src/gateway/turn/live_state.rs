//! Configuration-like state — the portfolio ledger, schedules, background
//! tasks, "always allow" rules — read now for a turn that touches it, so the
//! model acts on the live data rather than on what a summary or an old
//! message says (seeds/003: re-read, do not trust the summary). What a turn
//! touches is decided by the planner's check before the turn (`planner`):
//! the tools of the open plan's steps, and the model's classification of
//! the request (`live_check`).

use crate::domain::SessionKey;
use crate::gateway::Inner;
use crate::store::{MemoryOwner, SessionId};

/// Items listed per kind at most.
const MAX_ITEMS: usize = 20;

/// The kinds of live state a turn touches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::gateway) struct Touches {
    pub portfolio: bool,
    pub schedules: bool,
    pub tasks: bool,
    pub rules: bool,
}

impl Touches {
    /// Every kind: what a turn reads when the check could not say.
    pub fn all() -> Touches {
        Touches {
            portfolio: true,
            schedules: true,
            tasks: true,
            rules: true,
        }
    }

    /// One kind by the name the check's contract uses.
    pub fn of_kind(kind: &str) -> Option<Touches> {
        let mut t = Touches::default();
        match kind {
            "portfolio" => t.portfolio = true,
            "schedules" => t.schedules = true,
            "tasks" => t.tasks = true,
            "rules" => t.rules = true,
            _ => return None,
        }
        Some(t)
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

/// One kind's part of the section, read now.
#[derive(Debug, Clone)]
struct Part {
    text: String,
    /// Nothing of this kind exists ("none").
    empty: bool,
}

/// Every kind of live state of a turn's user and conversation, read now
/// (a kind that could not be read is left out).
#[derive(Debug, Clone, Default)]
pub(in crate::gateway) struct Snapshot {
    portfolio: Option<Part>,
    schedules: Option<Part>,
    tasks: Option<Part>,
    rules: Option<Part>,
}

impl Snapshot {
    /// Reads every kind now.
    pub async fn read(inner: &Inner, key: &SessionKey, session: &SessionId) -> Snapshot {
        Snapshot {
            portfolio: portfolio(inner, key).await,
            schedules: schedules(inner, session).await,
            tasks: tasks(inner, session).await,
            rules: rules(inner, key).await,
        }
    }

    /// Whether anything of any kind exists (else nothing can be stale).
    pub fn has_any(&self) -> bool {
        [&self.portfolio, &self.schedules, &self.tasks, &self.rules]
            .into_iter()
            .flatten()
            .any(|p| !p.empty)
    }

    /// The section of the kinds a turn `touches`; `None` for nothing.
    pub fn section(&self, touches: Touches) -> Option<String> {
        let parts: Vec<&str> = [
            (touches.portfolio, &self.portfolio),
            (touches.schedules, &self.schedules),
            (touches.tasks, &self.tasks),
            (touches.rules, &self.rules),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .filter_map(|(_, part)| part.as_ref().map(|p| p.text.as_str()))
        .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "[Live state — read just now for this request; where a summary or an earlier message says otherwise, this is right]\n{}",
                parts.join("\n")
            )
        })
    }
}

fn part(text: String, empty: bool) -> Option<Part> {
    Some(Part { text, empty })
}

/// The conversation's background tasks, latest first, read now.
async fn tasks(inner: &Inner, session: &SessionId) -> Option<Part> {
    match inner
        .store
        .tasks()
        .of_session(session, MAX_ITEMS as u32)
        .await
    {
        Ok(list) if list.is_empty() => part(
            "Background tasks in this conversation: none.".to_owned(),
            true,
        ),
        Ok(list) => {
            let lines: Vec<String> = list
                .iter()
                .map(|t| format!("- {} {} ({})", t.id.short(), t.tool_name, t.status.as_str()))
                .collect();
            part(
                format!(
                    "Background tasks in this conversation:\n{}",
                    lines.join("\n")
                ),
                false,
            )
        }
        Err(e) => {
            tracing::warn!(error = %e, "live state: tasks unavailable");
            None
        }
    }
}

/// The user's holdings, read now; `None` when unavailable.
async fn portfolio(inner: &Inner, key: &SessionKey) -> Option<Part> {
    let owner = MemoryOwner::new(key.platform, key.user);
    match inner.store.portfolio(owner).await {
        Ok(positions) if positions.is_empty() => part("Portfolio: no holdings.".to_owned(), true),
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
            part(format!("Portfolio holdings:\n{}", lines.join("\n")), false)
        }
        Err(e) => {
            tracing::warn!(error = %e, "live state: portfolio unavailable");
            None
        }
    }
}

/// The conversation's active schedules, read now; `None` when unavailable.
async fn schedules(inner: &Inner, session: &SessionId) -> Option<Part> {
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
            let text = if active.is_empty() {
                "Schedules in this conversation: none.".to_owned()
            } else {
                format!("Schedules in this conversation:\n{}", active.join("\n"))
            };
            part(text, active.is_empty())
        }
        Err(e) => {
            tracing::warn!(error = %e, "live state: schedules unavailable");
            None
        }
    }
}

/// The user's "always allow" rules, read now; `None` when unavailable.
async fn rules(inner: &Inner, key: &SessionKey) -> Option<Part> {
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
            let text = if lines.is_empty() {
                "Your \"always allow\" rules: none.".to_owned()
            } else {
                format!("Your \"always allow\" rules:\n{}", lines.join("\n"))
            };
            part(text, lines.is_empty())
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
    fn kinds_and_tools_name_what_they_touch() {
        assert_eq!(Touches::of_kind("rules").map(|t| t.rules), Some(true));
        assert_eq!(Touches::of_kind("weather"), None);
        assert!(
            Touches::of_tool("check_background_tasks").tasks
                && !Touches::of_tool("read_file").any()
        );
        let snap = Snapshot {
            rules: part("Rules: one.".into(), false),
            schedules: part("Schedules: none.".into(), true),
            ..Snapshot::default()
        };
        assert!(snap.has_any());
        let only = snap.section(Touches::of_kind("schedules").unwrap_or_default());
        assert!(only.is_some_and(|s| s.contains("Schedules: none.") && !s.contains("Rules")));
        assert_eq!(snap.section(Touches::default()), None);
        assert!(!Snapshot::default().has_any());
    }
}
