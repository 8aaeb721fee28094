//! The portfolio ledger (spec §4): each user's holdings, changed only through an
//! approved `update_portfolio` call and read by the safe `portfolio` tool. It is
//! the example of a data-mutating tool, so its arithmetic is exact.

mod decimal;
mod ledger;
mod report;

pub use decimal::{Decimal, DecimalError};
pub use ledger::{
    apply, currency, symbol, validate, Applied, LedgerError, Operation, Order, Position,
};
pub use report::{diagnose, overview};
