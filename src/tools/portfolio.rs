//! `portfolio` (view, diagnose, history — safe) and `update_portfolio` (buy,
//! sell, set, remove — approval): the calling user's ledger. The owner is the
//! user of the calling session; nobody else's ledger is reachable.

use super::args::parse_args;
use super::spec::{Tool, ToolContext, ToolError, ToolSpec};
use crate::portfolio::{self, Decimal, Operation, Order};
use crate::store::{MemoryOwner, PortfolioError, Store};
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::Arc;

/// Changes listed by `history` at most.
const MAX_HISTORY: u32 = 50;
const MAX_NOTE_CHARS: usize = 200;

/// Both ledger tools over one store.
pub fn portfolio_tools(store: Store) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(PortfolioTool {
            store: store.clone(),
            spec: view_spec(),
        }),
        Arc::new(UpdatePortfolioTool {
            store,
            spec: update_spec(),
        }),
    ]
}

fn view_spec() -> ToolSpec {
    ToolSpec {
        name: "portfolio".into(),
        display_name: "Portfolio".into(),
        description: "The current user's portfolio ledger. action=view lists holdings (quantity, average cost, cost \
                      basis, weights); diagnose checks concentration and diversification; history lists recent \
                      changes. Always use it to answer questions about the user's holdings — never answer from memory."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": { "type": "string", "enum": ["view", "diagnose", "history"], "description": "Default: view." },
                "limit": { "type": "integer", "minimum": 1, "maximum": MAX_HISTORY, "description": "For history: how many changes (default 10)." }
            },
            "additionalProperties": false
        }),
        concurrency_safe: true,
        requires_approval: false,
        background: false,
        // Holdings, a currency's total, realized results and findings survive
        // compaction word for word: figures must not be paraphrased.
        key_fields: ["units", "— cost basis", "realized", "concentration"]
            .map(String::from)
            .to_vec(),
    }
}

fn update_spec() -> ToolSpec {
    ToolSpec {
        name: "update_portfolio".into(),
        display_name: "Update portfolio".into(),
        description: "Change the current user's portfolio ledger (needs the user's approval). op=buy adds units at a \
                      price; sell removes units and reports the realized result (average-cost method); set overwrites \
                      a position with a broker's quantity and average cost (quantity 0 removes it); remove deletes it. \
                      Amounts are plain decimals such as 12.5 (strings are fine for exact values)."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "op": { "type": "string", "enum": ["buy", "sell", "set", "remove"] },
                "symbol": { "type": "string", "description": "Ticker or asset code, e.g. AAPL, 600519.SS, BTC." },
                "quantity": { "type": ["number", "string"], "description": "Units; for buy, sell and set." },
                "price": { "type": ["number", "string"], "description": "Price per unit for buy and sell; average cost for set." },
                "fee": { "type": ["number", "string"], "description": "Optional fee of a buy or sell." },
                "currency": { "type": "string", "description": "ISO code such as USD; must match the position's." },
                "note": { "type": "string", "description": "Optional note for the history (at most 200 characters)." }
            },
            "required": ["op", "symbol"],
            "additionalProperties": false
        }),
        concurrency_safe: false,
        requires_approval: true,
        background: false,
        // What a change did (the position after it, a realized result).
        key_fields: ["done:", "no longer held", "realized"]
            .map(String::from)
            .to_vec(),
    }
}

/// The user whose ledger a call may touch: the owner of the calling session.
async fn owner(store: &Store, ctx: &ToolContext) -> Result<MemoryOwner, ToolError> {
    match store.sessions().key(&ctx.session_id).await {
        Ok(Some(key)) => Ok(MemoryOwner::of(&key)),
        Ok(None) => Err(ToolError::failed(
            "the portfolio is only available inside a chat session",
        )),
        Err(e) => Err(unavailable(e)),
    }
}

fn unavailable(e: impl std::fmt::Display) -> ToolError {
    ToolError::Failed {
        message: "the portfolio ledger is unavailable right now".into(),
        diagnostics: Some(e.to_string()),
    }
}

struct PortfolioTool {
    store: Store,
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ViewArgs {
    action: Option<String>,
    limit: Option<u32>,
}

#[async_trait::async_trait]
impl Tool for PortfolioTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let args: ViewArgs = parse_args("portfolio", args.clone())?;
        match args.action.as_deref() {
            None | Some("view" | "diagnose" | "history") => Ok(()),
            Some(other) => Err(ToolError::InvalidArguments(format!(
                "unknown action {other:?}; use view, diagnose or history"
            ))),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        self.validate(&args)?;
        let args: ViewArgs = parse_args("portfolio", args)?;
        let owner = owner(&self.store, ctx).await?;
        if args.action.as_deref() == Some("history") {
            let limit = args.limit.unwrap_or(10).clamp(1, MAX_HISTORY);
            let trades = self
                .store
                .portfolio_trades(owner, limit)
                .await
                .map_err(unavailable)?;
            if trades.is_empty() {
                return Ok("No changes recorded yet.".into());
            }
            let mut out = String::new();
            for t in trades {
                let amount = |d: Option<Decimal>| d.map(|d| d.to_string()).unwrap_or_default();
                let _ = write!(
                    out,
                    "#{} {} {} {} {}",
                    t.id,
                    t.at.format("%Y-%m-%d %H:%M UTC"),
                    t.operation,
                    t.symbol,
                    amount(t.quantity)
                );
                if let Some(price) = t.price {
                    let _ = write!(out, " @ {price} {}", t.currency);
                }
                if let Some(realized) = t.realized {
                    let _ = write!(out, " (realized {realized})");
                }
                if let Some(note) = t.note {
                    let _ = write!(out, " — {note}");
                }
                out.push('\n');
            }
            return Ok(out.trim_end().to_owned());
        }
        let positions = self.store.portfolio(owner).await.map_err(unavailable)?;
        Ok(match args.action.as_deref() {
            Some("diagnose") => portfolio::diagnose(&positions),
            _ => portfolio::overview(&positions),
        })
    }
}

struct UpdatePortfolioTool {
    store: Store,
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    op: String,
    symbol: String,
    quantity: Option<Value>,
    price: Option<Value>,
    fee: Option<Value>,
    currency: Option<String>,
    note: Option<String>,
}

fn amount(name: &str, value: Option<&Value>) -> Result<Decimal, ToolError> {
    let value = value.ok_or_else(|| ToolError::InvalidArguments(format!("{name} is required")))?;
    Decimal::from_json(value).map_err(|e| ToolError::InvalidArguments(format!("{name}: {e}")))
}

/// The order a call asks for, fully checked.
fn order(args: &Value) -> Result<Order, ToolError> {
    let a: UpdateArgs = parse_args("update_portfolio", args.clone())?;
    let invalid = |e: portfolio::LedgerError| ToolError::InvalidArguments(e.to_string());
    let fee = match &a.fee {
        None => Decimal::ZERO,
        Some(v) => amount("fee", Some(v))?,
    };
    let unused = |fields: &[(&str, bool)]| -> Result<(), ToolError> {
        match fields.iter().find(|(_, given)| *given) {
            Some((name, _)) => Err(ToolError::InvalidArguments(format!(
                "{name} does not apply to {}; leave it out",
                a.op
            ))),
            None => Ok(()),
        }
    };
    match a.op.as_str() {
        "set" => unused(&[("fee", a.fee.is_some())])?,
        "remove" => unused(&[
            ("quantity", a.quantity.is_some()),
            ("price", a.price.is_some()),
            ("fee", a.fee.is_some()),
            ("currency", a.currency.is_some()),
        ])?,
        _ => {}
    }
    let operation = match a.op.as_str() {
        "buy" => Operation::Buy {
            quantity: amount("quantity", a.quantity.as_ref())?,
            price: amount("price", a.price.as_ref())?,
            fee,
        },
        "sell" => Operation::Sell {
            quantity: amount("quantity", a.quantity.as_ref())?,
            price: amount("price", a.price.as_ref())?,
            fee,
        },
        "set" => Operation::Set {
            quantity: amount("quantity", a.quantity.as_ref())?,
            average_cost: amount("price", a.price.as_ref())?,
        },
        "remove" => Operation::Remove,
        other => {
            return Err(ToolError::InvalidArguments(format!(
                "unknown op {other:?}; use buy, sell, set or remove"
            )))
        }
    };
    let note = a
        .note
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty());
    if note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return Err(ToolError::InvalidArguments(format!(
            "note is longer than {MAX_NOTE_CHARS} characters"
        )));
    }
    let order = Order {
        symbol: portfolio::symbol(&a.symbol).map_err(invalid)?,
        operation,
        currency: a
            .currency
            .as_deref()
            .map(portfolio::currency)
            .transpose()
            .map_err(invalid)?,
        note,
    };
    portfolio::validate(&order).map_err(invalid)?;
    Ok(order)
}

/// "Buy 10 AAPL at 150 USD (fee 1)".
fn describe(order: &Order) -> String {
    let currency = order
        .currency
        .as_deref()
        .map(|c| format!(" {c}"))
        .unwrap_or_default();
    let fee = |fee: &Decimal| {
        if fee.is_zero() {
            String::new()
        } else {
            format!(" (fee {fee}{currency})")
        }
    };
    let mut text = match &order.operation {
        Operation::Buy {
            quantity,
            price,
            fee: f,
        } => format!(
            "Buy {quantity} {} at {price}{currency}{}",
            order.symbol,
            fee(f)
        ),
        Operation::Sell {
            quantity,
            price,
            fee: f,
        } => format!(
            "Sell {quantity} {} at {price}{currency}{}",
            order.symbol,
            fee(f)
        ),
        Operation::Set {
            quantity,
            average_cost,
        } => format!(
            "Set {} to {quantity} units at an average cost of {average_cost}{currency}",
            order.symbol
        ),
        Operation::Remove => format!("Remove the {} position", order.symbol),
    };
    if let Some(note) = &order.note {
        let _ = write!(text, " — note: {note}");
    }
    text
}

#[async_trait::async_trait]
impl Tool for UpdatePortfolioTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn validate(&self, args: &Value) -> Result<(), ToolError> {
        order(args).map(|_| ())
    }

    async fn approval_summary(&self, args: &Value) -> String {
        match order(args) {
            Ok(order) => format!("{}\n(in your portfolio ledger)", describe(&order)),
            Err(_) => serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string()),
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let order = order(&args)?;
        let owner = owner(&self.store, ctx).await?;
        let applied = self
            .store
            .apply_portfolio_order(owner, &order, &ctx.session_id, Utc::now())
            .await
            .map_err(|e| match e {
                PortfolioError::Ledger(e) => ToolError::failed(e.to_string()),
                PortfolioError::Store(e) => unavailable(e),
            })?;
        let mut out = format!("Done: {}.", describe(&order));
        match &applied.after {
            Some(p) => {
                let _ = write!(
                    out,
                    " {} is now {} units, average cost {}, cost basis {}{}.",
                    p.symbol,
                    p.quantity,
                    p.average_cost(),
                    p.cost,
                    if p.currency.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", p.currency)
                    }
                );
            }
            None => {
                let _ = write!(out, " {} is no longer held.", order.symbol);
            }
        }
        if let Some(realized) = applied.realized {
            let _ = write!(out, " Realized result: {realized}.");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_checked_before_anyone_is_asked() {
        let ok = order(&json!({"op": "buy", "symbol": "aapl", "quantity": 10, "price": "150.25", "currency": "usd"}))
            .unwrap();
        assert_eq!(ok.symbol, "AAPL");
        assert_eq!(describe(&ok), "Buy 10 AAPL at 150.25 USD");
        for (bad, why) in [
            (
                json!({"op": "buy", "symbol": "AAPL", "price": 1}),
                "quantity is required",
            ),
            (
                json!({"op": "buy", "symbol": "AAPL", "quantity": 0, "price": 1}),
                "above 0",
            ),
            (
                json!({"op": "buy", "symbol": "AAPL", "quantity": 1e-9, "price": 1}),
                "quantity",
            ),
            (json!({"op": "short", "symbol": "AAPL"}), "unknown op"),
            (json!({"op": "remove", "symbol": "A B"}), "not a symbol"),
            (
                json!({"op": "remove", "symbol": "A", "extra": 1}),
                "unknown field",
            ),
            (
                json!({"op": "buy", "symbol": "A", "quantity": 1, "price": 1, "currency": "dollars"}),
                "currency",
            ),
        ] {
            let e = order(&bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
