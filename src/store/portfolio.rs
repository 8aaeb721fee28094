//! The portfolio ledger's rows: positions per user and the trade log. An order
//! is read, applied and written in one write transaction, so two approved
//! updates of the same user never interleave.

use super::memories::MemoryOwner;
use super::{dt, ms, Backend, Store, StoreError};
use crate::domain::SessionId;
use crate::portfolio::{self, Applied, Decimal, LedgerError, Order, Position};
use chrono::{DateTime, Utc};
use sqlx::Row;

/// One logged change.
#[derive(Debug, Clone, PartialEq)]
pub struct TradeRecord {
    pub id: i64,
    pub symbol: String,
    pub operation: String,
    pub quantity: Option<Decimal>,
    pub price: Option<Decimal>,
    pub realized: Option<Decimal>,
    pub currency: String,
    pub note: Option<String>,
    pub at: DateTime<Utc>,
}

/// Why an order was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum PortfolioError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for PortfolioError {
    fn from(e: sqlx::Error) -> Self {
        PortfolioError::Store(StoreError::Sql(e))
    }
}

fn decimal(text: &str) -> Result<Decimal, StoreError> {
    Decimal::parse(text).map_err(|e| StoreError::Corrupt(format!("portfolio amount: {e}")))
}

fn optional(text: Option<String>) -> Result<Option<Decimal>, StoreError> {
    text.as_deref().map(decimal).transpose()
}

impl Store {
    /// The positions of `owner`, by symbol.
    pub async fn portfolio(&self, owner: MemoryOwner) -> Result<Vec<Position>, StoreError> {
        let rows = sqlx::query(
            "SELECT symbol, quantity, cost, currency FROM portfolio_positions
             WHERE platform = $1 AND user_id = $2 ORDER BY symbol",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Position {
                    symbol: r.try_get("symbol")?,
                    quantity: decimal(&r.try_get::<String, _>("quantity")?)?,
                    cost: decimal(&r.try_get::<String, _>("cost")?)?,
                    currency: r.try_get("currency")?,
                })
            })
            .collect()
    }

    /// The latest `limit` changes of `owner`, newest first.
    pub async fn portfolio_trades(
        &self,
        owner: MemoryOwner,
        limit: u32,
    ) -> Result<Vec<TradeRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, symbol, operation, quantity, price, realized, currency, note, created_at
             FROM portfolio_trades WHERE platform = $1 AND user_id = $2
             ORDER BY id DESC LIMIT $3",
        )
        .bind(owner.platform.as_str())
        .bind(owner.user.0)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(TradeRecord {
                    id: r.try_get("id")?,
                    symbol: r.try_get("symbol")?,
                    operation: r.try_get("operation")?,
                    quantity: optional(r.try_get("quantity")?)?,
                    price: optional(r.try_get("price")?)?,
                    realized: optional(r.try_get("realized")?)?,
                    currency: r.try_get("currency")?,
                    note: r.try_get("note")?,
                    at: dt(r.try_get("created_at")?),
                })
            })
            .collect()
    }

    /// Applies `order` to `owner`'s ledger and logs it, atomically.
    pub async fn apply_portfolio_order(
        &self,
        owner: MemoryOwner,
        order: &Order,
        session_id: &SessionId,
        at: DateTime<Utc>,
    ) -> Result<Applied, PortfolioError> {
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            // Serializes orders per user, including the first one of a symbol
            // (no row to lock yet). SQLite's BEGIN IMMEDIATE already does.
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
                .bind(format!(
                    "portfolio:{}:{}",
                    owner.platform.as_str(),
                    owner.user.0
                ))
                .execute(&mut *tx)
                .await?;
        }
        let current = position_in(&mut tx, owner, &order.symbol).await?;
        let applied = portfolio::apply(current.as_ref(), order)?;
        write_position(&mut tx, owner, &order.symbol, applied.after.as_ref(), at).await?;
        let currency = applied
            .after
            .as_ref()
            .map(|p| p.currency.clone())
            .or_else(|| current.map(|p| p.currency))
            .unwrap_or_default();
        log_trade(&mut tx, owner, order, &applied, &currency, session_id, at).await?;
        tx.commit().await?;
        Ok(applied)
    }
}

/// The owner's position in `symbol`, read inside the order's transaction.
async fn position_in(
    tx: &mut sqlx::AnyConnection,
    owner: MemoryOwner,
    symbol: &str,
) -> Result<Option<Position>, StoreError> {
    let row = sqlx::query(
        "SELECT quantity, cost, currency FROM portfolio_positions
         WHERE platform = $1 AND user_id = $2 AND symbol = $3",
    )
    .bind(owner.platform.as_str())
    .bind(owner.user.0)
    .bind(symbol)
    .fetch_optional(&mut *tx)
    .await?;
    row.map(|r| {
        Ok(Position {
            symbol: symbol.to_owned(),
            quantity: decimal(&r.try_get::<String, _>("quantity")?)?,
            cost: decimal(&r.try_get::<String, _>("cost")?)?,
            currency: r.try_get("currency")?,
        })
    })
    .transpose()
}

/// Stores the position after an order (`None`: the position is closed).
async fn write_position(
    tx: &mut sqlx::AnyConnection,
    owner: MemoryOwner,
    symbol: &str,
    after: Option<&Position>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    match after {
        Some(p) => {
            sqlx::query(
                "INSERT INTO portfolio_positions (platform, user_id, symbol, quantity, cost, currency, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (platform, user_id, symbol) DO UPDATE SET
                   quantity = excluded.quantity, cost = excluded.cost,
                   currency = excluded.currency, updated_at = excluded.updated_at",
            )
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .bind(&p.symbol)
            .bind(p.quantity.to_string())
            .bind(p.cost.to_string())
            .bind(&p.currency)
            .bind(ms(at))
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query(
                "DELETE FROM portfolio_positions WHERE platform = $1 AND user_id = $2 AND symbol = $3",
            )
            .bind(owner.platform.as_str())
            .bind(owner.user.0)
            .bind(symbol)
            .execute(&mut *tx)
            .await?;
        }
    }
    Ok(())
}

/// Appends the order to the owner's trade log.
async fn log_trade(
    tx: &mut sqlx::AnyConnection,
    owner: MemoryOwner,
    order: &Order,
    applied: &Applied,
    currency: &str,
    session_id: &SessionId,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let (quantity, price, fee) = order.operation.figures();
    sqlx::query(
        "INSERT INTO portfolio_trades
           (platform, user_id, symbol, operation, quantity, price, fee, realized, currency, note, session_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(owner.platform.as_str())
    .bind(owner.user.0)
    .bind(&order.symbol)
    .bind(order.operation.name())
    .bind(quantity.map(|d| d.to_string()))
    .bind(price.map(|d| d.to_string()))
    .bind(fee.map(|d| d.to_string()))
    .bind(applied.realized.map(|d| d.to_string()))
    .bind(currency)
    .bind(order.note.clone())
    .bind(session_id)
    .bind(ms(at))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::portfolio::Operation;
    use crate::store::test_store;
    use switchboard_platform::{Platform, UserId};

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    fn buy(symbol: &str, q: &str, p: &str) -> Order {
        Order {
            symbol: symbol.into(),
            operation: Operation::Buy {
                quantity: d(q),
                price: d(p),
                fee: Decimal::ZERO,
            },
            currency: Some("USD".into()),
            note: Some("first lot".into()),
        }
    }

    #[tokio::test]
    async fn orders_change_only_their_owners_ledger() {
        let (store, _dir) = test_store().await;
        let alice = MemoryOwner::new(Platform::Telegram, UserId(1));
        let bob = MemoryOwner::new(Platform::Telegram, UserId(2));
        let now = Utc::now();
        store
            .apply_portfolio_order(alice, &buy("AAPL", "10", "100"), &"s".parse().unwrap(), now)
            .await
            .unwrap();
        store
            .apply_portfolio_order(alice, &buy("AAPL", "10", "200"), &"s".parse().unwrap(), now)
            .await
            .unwrap();
        let held = store.portfolio(alice).await.unwrap();
        assert_eq!(held.len(), 1);
        assert_eq!((held[0].quantity, held[0].cost), (d("20"), d("3000")));
        assert!(store.portfolio(bob).await.unwrap().is_empty());

        let sell = Order {
            operation: Operation::Sell {
                quantity: d("25"),
                price: d("1"),
                fee: Decimal::ZERO,
            },
            ..buy("AAPL", "1", "1")
        };
        let refused = store
            .apply_portfolio_order(alice, &sell, &"s".parse().unwrap(), now)
            .await;
        assert!(matches!(
            refused,
            Err(PortfolioError::Ledger(LedgerError::Insufficient { .. }))
        ));
        let trades = store.portfolio_trades(alice, 10).await.unwrap();
        assert_eq!(trades.len(), 2, "a refused order is not logged");
        assert_eq!(trades[0].price, Some(d("200")));
        assert_eq!(trades[0].note.as_deref(), Some("first lot"));
        assert!(store.portfolio_trades(bob, 10).await.unwrap().is_empty());
    }
}
