//! `/usage [days]`: this user's tokens, cache hit rate and estimated cost
//! per model over the last days (today by default).

use crate::domain::SessionKey;
use crate::gateway::commands::Command;
use crate::gateway::Inner;
use crate::store::{ModelUsage, StoreError};

/// Longest period `/usage` reports.
const MAX_DAYS: u32 = 90;

pub(crate) async fn run(
    inner: &Inner,
    cmd: &Command<'_>,
    key: &SessionKey,
) -> Result<String, StoreError> {
    let days = match cmd.args.first() {
        None => 1,
        Some(raw) => match raw.parse::<u32>() {
            Ok(d) if (1..=MAX_DAYS).contains(&d) => d,
            _ => {
                return Ok(format!(
                    "Usage: `/usage [days]` — 1 to {MAX_DAYS} days (today by default)."
                ))
            }
        },
    };
    let rows = inner
        .store
        .usage()
        .by_model(Some((key.platform, key.user)), days)
        .await?;
    let period = if days == 1 {
        "Today".to_owned()
    } else {
        format!("Last {days} days")
    };
    Ok(report(&period, &rows))
}

/// The report: one line per model and a total.
pub fn report(period: &str, rows: &[ModelUsage]) -> String {
    if rows.is_empty() {
        return format!("{period}: no model usage.");
    }
    let mut lines = vec![format!(
        "**{period}** (estimated cost at the prices of the time):"
    )];
    for r in rows {
        lines.push(format!("• `{}`: {}", r.model, line(r)));
    }
    if rows.len() > 1 {
        let mut total = ModelUsage::default();
        for r in rows {
            total.turns += r.turns;
            total.usage.input_tokens += r.usage.input_tokens;
            total.usage.output_tokens += r.usage.output_tokens;
            total.usage.cache_read_tokens += r.usage.cache_read_tokens;
            total.usage.cache_write_tokens += r.usage.cache_write_tokens;
            total.cost_micros += r.cost_micros;
        }
        lines.push(format!("• total: {}", line(&total)));
    }
    lines.join("\n")
}

fn line(r: &ModelUsage) -> String {
    let u = &r.usage;
    let hit = if u.input_tokens > 0 {
        format!(
            "{:.0} %",
            u.cache_read_tokens as f64 * 100.0 / u.input_tokens as f64
        )
    } else {
        "–".to_owned()
    };
    format!(
        "{} turns · {} in / {} out tokens · cache hits {hit} ({} read, {} written) · ${}",
        r.turns,
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        dollars(r.cost_micros)
    )
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
