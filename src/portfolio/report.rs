//! What the `portfolio` tool shows: the holdings (view) and a cost-basis
//! health check (diagnose). Market prices are never looked up or guessed.

use super::decimal::Decimal;
use super::ledger::Position;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One position above this share of its currency's cost basis is a concentration.
const CONCENTRATED_PERCENT: f64 = 40.0;
/// The three largest above this share, with more than three positions.
const TOP3_PERCENT: f64 = 80.0;
/// Fewer positions than this in a currency: little diversification.
const FEW_POSITIONS: usize = 3;

/// Positions grouped by currency (empty currency last, as "unspecified").
fn by_currency(positions: &[Position]) -> BTreeMap<String, Vec<&Position>> {
    let mut groups: BTreeMap<String, Vec<&Position>> = BTreeMap::new();
    for p in positions {
        let key = if p.currency.is_empty() {
            "~unspecified".to_owned()
        } else {
            p.currency.clone()
        };
        groups.entry(key).or_default().push(p);
    }
    for group in groups.values_mut() {
        group.sort_by(|a, b| b.cost.cmp(&a.cost).then(a.symbol.cmp(&b.symbol)));
    }
    groups
}

fn label(currency: &str) -> &str {
    currency.strip_prefix('~').unwrap_or(currency)
}

fn total(group: &[&Position]) -> Decimal {
    group
        .iter()
        .try_fold(Decimal::ZERO, |sum, p| sum.checked_add(p.cost))
        .unwrap_or(Decimal::ZERO)
}

/// The holdings as a table per currency.
pub fn overview(positions: &[Position]) -> String {
    if positions.is_empty() {
        return "The portfolio is empty. Record holdings with update_portfolio (buy, or set to import a broker's figures).".into();
    }
    let mut out = String::new();
    for (currency, group) in by_currency(positions) {
        let sum = total(&group);
        let _ = writeln!(out, "{} — cost basis {sum}", label(&currency));
        for p in group {
            let _ = writeln!(
                out,
                "- {}: {} units, average cost {}, cost basis {} ({}%)",
                p.symbol,
                p.quantity,
                p.average_cost(),
                p.cost,
                p.cost.percent_of(sum)
            );
        }
    }
    out.push_str("(Cost basis only: current prices are not known to the ledger.)");
    out
}

/// Findings about concentration and diversification, by cost basis.
pub fn diagnose(positions: &[Position]) -> String {
    if positions.is_empty() {
        return "Nothing to diagnose: the portfolio is empty.".into();
    }
    let mut findings = Vec::new();
    for (currency, group) in by_currency(positions) {
        let currency = label(&currency);
        let sum = total(&group);
        if let Some(top) = group.first() {
            let share = top.cost.percent_of(sum);
            if group.len() > 1 && share > CONCENTRATED_PERCENT {
                findings.push(format!(
                    "⚠ Concentration ({currency}): {} is {share}% of the cost basis (above {CONCENTRATED_PERCENT}%).",
                    top.symbol
                ));
            }
        }
        if group.len() > FEW_POSITIONS {
            let top3 = group
                .iter()
                .take(3)
                .try_fold(Decimal::ZERO, |s, p| s.checked_add(p.cost))
                .unwrap_or(Decimal::ZERO);
            let share = top3.percent_of(sum);
            if share > TOP3_PERCENT {
                findings.push(format!(
                    "⚠ Concentration ({currency}): the three largest positions are {share}% of the cost basis."
                ));
            }
        }
        if group.len() < FEW_POSITIONS {
            findings.push(format!(
                "• Diversification ({currency}): only {} position{}.",
                group.len(),
                if group.len() == 1 { "" } else { "s" }
            ));
        }
        let unknown: Vec<&str> = group
            .iter()
            .filter(|p| p.cost.is_zero())
            .map(|p| p.symbol.as_str())
            .collect();
        if !unknown.is_empty() {
            findings.push(format!(
                "• Cost unknown ({currency}): {} — weights leave them out.",
                unknown.join(", ")
            ));
        }
    }
    if positions.iter().any(|p| p.currency.is_empty()) {
        findings.push("• Some positions have no currency; give one on the next update so totals are not mixed.".into());
    }
    if findings.is_empty() {
        findings.push("✓ No concentration or diversification issues by cost basis.".into());
    }
    findings.push("(Judged by cost basis; market prices are not looked up.)".into());
    findings.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(symbol: &str, cost: &str, currency: &str) -> Position {
        Position {
            symbol: symbol.into(),
            quantity: Decimal::parse("1").unwrap(),
            cost: Decimal::parse(cost).unwrap(),
            currency: currency.into(),
        }
    }

    #[test]
    fn overview_groups_by_currency_with_weights() {
        let text = overview(&[
            p("AAPL", "300", "USD"),
            p("MSFT", "100", "USD"),
            p("SAP", "50", "EUR"),
        ]);
        assert!(text.contains("USD — cost basis 400"), "{text}");
        assert!(
            text.contains("AAPL: 1 units, average cost 300, cost basis 300 (75%)"),
            "{text}"
        );
        assert!(text.find("EUR").unwrap() < text.find("USD").unwrap());
        assert!(overview(&[]).contains("empty"));
    }

    #[test]
    fn diagnose_names_concentration_and_few_positions() {
        let text = diagnose(&[p("AAPL", "900", "USD"), p("MSFT", "100", "USD")]);
        assert!(text.contains("AAPL is 90% of the cost basis"), "{text}");
        assert!(text.contains("only 2 positions"), "{text}");
        let spread: Vec<Position> = ["A", "B", "C", "D", "E"]
            .iter()
            .map(|s| p(s, "100", "USD"))
            .collect();
        let text = diagnose(&spread);
        assert!(text.contains("✓ No concentration"), "{text}");
        let text = diagnose(&[p("A", "0", ""), p("B", "10", "")]);
        assert!(text.contains("Cost unknown (unspecified): A"), "{text}");
        assert!(text.contains("no currency"), "{text}");
    }
}
