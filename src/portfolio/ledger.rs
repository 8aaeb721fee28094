//! The ledger's rules: what a buy, sell, set or remove does to a position.
//! Pure functions; the store applies them inside one write transaction.

use super::decimal::{Decimal, DecimalError};

/// Longest symbol accepted.
const MAX_SYMBOL_CHARS: usize = 20;

/// One holding of a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub symbol: String,
    pub quantity: Decimal,
    /// Total cost basis (average-cost method).
    pub cost: Decimal,
    /// ISO code such as USD, or empty when never given.
    pub currency: String,
}

impl Position {
    /// Cost per unit.
    pub fn average_cost(&self) -> Decimal {
        self.cost
            .checked_div(self.quantity)
            .unwrap_or(Decimal::ZERO)
    }
}

/// A change to one position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    Buy {
        quantity: Decimal,
        price: Decimal,
        fee: Decimal,
    },
    Sell {
        quantity: Decimal,
        price: Decimal,
        fee: Decimal,
    },
    /// Overwrite with a broker's figures (quantity 0 removes the position).
    Set {
        quantity: Decimal,
        average_cost: Decimal,
    },
    Remove,
}

impl Operation {
    /// The stored name of the operation.
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Buy { .. } => "buy",
            Operation::Sell { .. } => "sell",
            Operation::Set { .. } => "set",
            Operation::Remove => "remove",
        }
    }

    /// What the trade log records of it: quantity, price (the average cost
    /// for `set`) and fee, each where the operation has one.
    pub fn figures(&self) -> (Option<Decimal>, Option<Decimal>, Option<Decimal>) {
        match self {
            Operation::Buy {
                quantity,
                price,
                fee,
            }
            | Operation::Sell {
                quantity,
                price,
                fee,
            } => (Some(*quantity), Some(*price), Some(*fee)),
            Operation::Set {
                quantity,
                average_cost,
            } => (Some(*quantity), Some(*average_cost), None),
            Operation::Remove => (None, None, None),
        }
    }
}

/// An operation on a symbol, as requested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub symbol: String,
    pub operation: Operation,
    /// Must match the position's currency when both are known.
    pub currency: Option<String>,
    pub note: Option<String>,
}

/// The result of applying an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// `None` when the position is gone.
    pub after: Option<Position>,
    /// Profit or loss a sale realized (proceeds − fee − average cost).
    pub realized: Option<Decimal>,
}

/// Why an order cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    #[error("{0}")]
    Invalid(String),
    #[error("there is no {0} position")]
    NotHeld(String),
    #[error("cannot sell {wanted} {symbol}: only {held} held")]
    Insufficient {
        symbol: String,
        held: Decimal,
        wanted: Decimal,
    },
    #[error("{symbol} is kept in {held}, not {given}")]
    CurrencyMismatch {
        symbol: String,
        held: String,
        given: String,
    },
    #[error(transparent)]
    Amount(#[from] DecimalError),
}

/// A normalized symbol: trimmed, upper case, letters, digits and `._:/-`.
pub fn symbol(raw: &str) -> Result<String, LedgerError> {
    let s = raw.trim().to_uppercase();
    let ok = !s.is_empty()
        && s.chars().count() <= MAX_SYMBOL_CHARS
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-'));
    if ok {
        Ok(s)
    } else {
        Err(LedgerError::Invalid(format!(
            "{raw:?} is not a symbol (1 to {MAX_SYMBOL_CHARS} letters, digits or . _ : / -)"
        )))
    }
}

/// A normalized currency code: three ASCII letters, upper case.
pub fn currency(raw: &str) -> Result<String, LedgerError> {
    let c = raw.trim().to_ascii_uppercase();
    if c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()) {
        Ok(c)
    } else {
        Err(LedgerError::Invalid(format!(
            "{raw:?} is not a currency code like USD"
        )))
    }
}

fn positive(what: &str, d: Decimal) -> Result<(), LedgerError> {
    if d.is_negative() || d.is_zero() {
        return Err(LedgerError::Invalid(format!("{what} must be above 0")));
    }
    Ok(())
}

fn not_negative(what: &str, d: Decimal) -> Result<(), LedgerError> {
    if d.is_negative() {
        return Err(LedgerError::Invalid(format!("{what} cannot be negative")));
    }
    Ok(())
}

/// Checks an order on its own (before anyone is asked to approve it).
pub fn validate(order: &Order) -> Result<(), LedgerError> {
    match &order.operation {
        Operation::Buy {
            quantity,
            price,
            fee,
        }
        | Operation::Sell {
            quantity,
            price,
            fee,
        } => {
            positive("quantity", *quantity)?;
            not_negative("price", *price)?;
            not_negative("fee", *fee)?;
            // The cost must be representable.
            quantity.checked_mul(*price)?.checked_add(*fee)?;
        }
        Operation::Set {
            quantity,
            average_cost,
        } => {
            not_negative("quantity", *quantity)?;
            not_negative("average cost", *average_cost)?;
            quantity.checked_mul(*average_cost)?;
        }
        Operation::Remove => {}
    }
    Ok(())
}

/// Applies `order` to the current position of its symbol.
pub fn apply(current: Option<&Position>, order: &Order) -> Result<Applied, LedgerError> {
    validate(order)?;
    let currency = order_currency(current, order)?;
    let position = |quantity: Decimal, cost: Decimal| Position {
        symbol: order.symbol.clone(),
        quantity,
        cost,
        currency: currency.clone(),
    };
    match &order.operation {
        Operation::Buy {
            quantity,
            price,
            fee,
        } => {
            let (held, cost) =
                current.map_or((Decimal::ZERO, Decimal::ZERO), |p| (p.quantity, p.cost));
            let added = quantity.checked_mul(*price)?.checked_add(*fee)?;
            Ok(Applied {
                after: Some(position(
                    held.checked_add(*quantity)?,
                    cost.checked_add(added)?,
                )),
                realized: None,
            })
        }
        Operation::Sell {
            quantity,
            price,
            fee,
        } => sell(current, order, (*quantity, *price, *fee), &position),
        Operation::Set {
            quantity,
            average_cost,
        } => Ok(Applied {
            after: (!quantity.is_zero())
                .then(|| {
                    quantity
                        .checked_mul(*average_cost)
                        .map(|c| position(*quantity, c))
                })
                .transpose()?,
            realized: None,
        }),
        Operation::Remove => {
            current.ok_or_else(|| LedgerError::NotHeld(order.symbol.clone()))?;
            Ok(Applied {
                after: None,
                realized: None,
            })
        }
    }
}

/// The order's currency: the one given, else the position's; refused when
/// the two differ.
fn order_currency(current: Option<&Position>, order: &Order) -> Result<String, LedgerError> {
    match (current.map(|p| p.currency.as_str()), &order.currency) {
        (Some(held), Some(given)) if !held.is_empty() && held != given => {
            Err(LedgerError::CurrencyMismatch {
                symbol: order.symbol.clone(),
                held: held.to_owned(),
                given: given.clone(),
            })
        }
        (_, Some(given)) => Ok(given.clone()),
        (Some(held), None) => Ok(held.to_owned()),
        (None, None) => Ok(String::new()),
    }
}

/// A sale of `quantity` at `price` less `fee`: what is left, and the gain
/// or loss realized against the cost that leaves with the units.
fn sell(
    current: Option<&Position>,
    order: &Order,
    (quantity, price, fee): (Decimal, Decimal, Decimal),
    position: &dyn Fn(Decimal, Decimal) -> Position,
) -> Result<Applied, LedgerError> {
    let held = current.ok_or_else(|| LedgerError::NotHeld(order.symbol.clone()))?;
    if quantity > held.quantity {
        return Err(LedgerError::Insufficient {
            symbol: order.symbol.clone(),
            held: held.quantity,
            wanted: quantity,
        });
    }
    let left = held.quantity.checked_sub(quantity)?;
    // The cost that leaves with the units, rounded once and never more than
    // the basis; all of it on a full sale, so no residue stays behind.
    let released = if left.is_zero() {
        held.cost
    } else {
        held.cost
            .mul_div(quantity, held.quantity)
            .or_else(|_| held.average_cost().checked_mul(quantity))?
            .clamp(Decimal::ZERO, held.cost)
    };
    let proceeds = quantity.checked_mul(price)?.checked_sub(fee)?;
    let after = (!left.is_zero()).then(|| {
        position(
            left,
            held.cost.checked_sub(released).unwrap_or(Decimal::ZERO),
        )
    });
    Ok(Applied {
        after,
        realized: Some(proceeds.checked_sub(released)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    fn order(operation: Operation) -> Order {
        Order {
            symbol: "AAPL".into(),
            operation,
            currency: Some("USD".into()),
            note: None,
        }
    }

    fn buy(q: &str, p: &str) -> Operation {
        Operation::Buy {
            quantity: d(q),
            price: d(p),
            fee: Decimal::ZERO,
        }
    }

    fn sell(q: &str, p: &str) -> Operation {
        Operation::Sell {
            quantity: d(q),
            price: d(p),
            fee: d("1"),
        }
    }

    #[test]
    fn buys_average_and_sales_realize_against_the_average() {
        let a = apply(None, &order(buy("10", "100")))
            .unwrap()
            .after
            .unwrap();
        let b = apply(Some(&a), &order(buy("10", "200")))
            .unwrap()
            .after
            .unwrap();
        assert_eq!(
            (b.quantity, b.cost, b.average_cost()),
            (d("20"), d("3000"), d("150"))
        );
        let sold = apply(Some(&b), &order(sell("5", "170"))).unwrap();
        // 5 × 170 − 1 fee − 5 × 150 = 99
        assert_eq!(sold.realized, Some(d("99")));
        let left = sold.after.unwrap();
        assert_eq!((left.quantity, left.cost), (d("15"), d("2250")));
        let all = apply(Some(&left), &order(sell("15", "100"))).unwrap();
        assert_eq!(all.after, None);
        assert_eq!(all.realized, Some(d("-751")));
    }

    #[test]
    fn a_sale_never_leaves_a_negative_basis() {
        let held = Position {
            symbol: "AAPL".into(),
            quantity: d("3000"),
            cost: d("2"),
            currency: "USD".into(),
        };
        let sold = apply(
            Some(&held),
            &order(Operation::Sell {
                quantity: d("2999.99999999"),
                price: d("0"),
                fee: Decimal::ZERO,
            }),
        )
        .unwrap();
        let left = sold.after.unwrap();
        assert_eq!(left.quantity, d("0.00000001"));
        assert!(!left.cost.is_negative(), "{left:?}");
        assert_eq!(left.cost, Decimal::ZERO);
        assert_eq!(sold.realized, Some(d("-2")));
    }

    #[test]
    fn impossible_orders_are_refused() {
        let a = apply(None, &order(buy("3", "1"))).unwrap().after.unwrap();
        assert!(matches!(
            apply(Some(&a), &order(sell("4", "1"))),
            Err(LedgerError::Insufficient { .. })
        ));
        assert!(matches!(
            apply(None, &order(sell("1", "1"))),
            Err(LedgerError::NotHeld(_))
        ));
        assert!(matches!(
            apply(None, &order(Operation::Remove)),
            Err(LedgerError::NotHeld(_))
        ));
        assert!(matches!(
            apply(None, &order(buy("0", "1"))),
            Err(LedgerError::Invalid(_))
        ));
        assert!(matches!(
            apply(None, &order(buy("1", "-1"))),
            Err(LedgerError::Invalid(_))
        ));
        let mut eur = order(buy("1", "1"));
        eur.currency = Some("EUR".into());
        assert!(matches!(
            apply(Some(&a), &eur),
            Err(LedgerError::CurrencyMismatch { .. })
        ));
    }

    #[test]
    fn set_overwrites_and_zero_removes() {
        let set = |q: &str| {
            order(Operation::Set {
                quantity: d(q),
                average_cost: d("2.5"),
            })
        };
        let p = apply(None, &set("4")).unwrap().after.unwrap();
        assert_eq!(p.cost, d("10"));
        assert_eq!(apply(Some(&p), &set("0")).unwrap().after, None);
    }

    #[test]
    fn symbols_and_currencies_are_normalized() {
        assert_eq!(symbol(" brk.b ").unwrap(), "BRK.B");
        assert_eq!(symbol("600519.SS").unwrap(), "600519.SS");
        assert_eq!(symbol("btc/usdt").unwrap(), "BTC/USDT");
        assert!(symbol("").is_err());
        assert!(symbol("a b").is_err());
        assert!(symbol(&"X".repeat(21)).is_err());
        assert_eq!(currency("usd").unwrap(), "USD");
        assert!(currency("dollars").is_err());
    }
}
