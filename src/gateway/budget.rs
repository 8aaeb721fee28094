//! Daily budgets (`BUDGET_USER_DAILY_USD`, `BUDGET_TOTAL_DAILY_USD`): past
//! one, turns stop with a notice until the day (UTC) rolls over or the
//! operator raises it; commands still answer.

use super::Inner;
use crate::domain::SessionKey;

/// The notice for a turn that must not run, or `None` when it may.
pub(super) async fn refusal(inner: &Inner, key: &SessionKey) -> Option<String> {
    let budgets = inner.models.settings().budgets;
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

/// Micro-dollars as dollars with cents (`1.50`), or more digits under a cent.
pub(crate) fn dollars(micros: i64) -> String {
    let usd = micros as f64 / 1e6;
    if usd != 0.0 && usd.abs() < 0.01 {
        format!("{usd:.4}")
    } else {
        format!("{usd:.2}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn amounts_show_cents_or_fractions_of_a_cent() {
        assert_eq!(super::dollars(1_500_000), "1.50");
        assert_eq!(super::dollars(0), "0.00");
        assert_eq!(super::dollars(2_500), "0.0025");
    }
}
