//! Daily budgets (`BUDGET_USER_DAILY_USD`, `BUDGET_TOTAL_DAILY_USD`): past
//! one, turns stop with a notice until the day (UTC) rolls over or the
//! operator raises it; commands still answer.

use crate::domain::SessionKey;
use crate::gateway::commands::usage::dollars;
use crate::gateway::Inner;

/// The notice for a turn that must not run, or `None` when it may.
pub(in crate::gateway) async fn refusal(inner: &Inner, key: &SessionKey) -> Option<String> {
    let budgets = inner.features.models.settings().budgets;
    if let Some(limit) = budgets.user_daily_micros {
        match inner.store.usage().cost_today(Some((key.platform, key.user))).await {
            Ok(spent) if spent >= limit => {
                return Some(format!(
                    "💸 You have used your daily budget (${} of ${}). I can answer again after midnight UTC, or when the operator raises `BUDGET_USER_DAILY_USD`. Commands such as /usage still work.",
                    dollars(spent),
                    dollars(limit)
                ))
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not read today's cost; the turn runs"),
        }
    }
    if let Some(limit) = budgets.total_daily_micros {
        match inner.store.usage().cost_today(None).await {
            Ok(spent) if spent >= limit => {
                return Some(format!(
                    "💸 The gateway's daily budget is used up (${} of ${}). I can answer again after midnight UTC, or when the operator raises `BUDGET_TOTAL_DAILY_USD`. Commands still work.",
                    dollars(spent),
                    dollars(limit)
                ))
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not read today's total cost; the turn runs"),
        }
    }
    None
}
