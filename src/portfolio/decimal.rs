//! Exact decimal amounts for the ledger: quantities, prices and cost bases with
//! up to eight decimal places, stored as text. No floating point touches money.

use std::fmt;

/// Decimal places kept.
const SCALE: u32 = 8;
const ONE: i128 = 10_i128.pow(SCALE);
/// Integer digits accepted (far above any real holding, far below overflow).
const MAX_INT_DIGITS: usize = 18;

/// A fixed-point decimal with eight places.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Decimal(i128);

/// Why a text is not an amount, or a computation left the supported range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    #[error("{0:?} is not a plain decimal number (like 12 or 0.5)")]
    Malformed(String),
    #[error("{0:?} has more than 8 decimal places")]
    TooPrecise(String),
    #[error("{0:?} is too large")]
    TooLarge(String),
    #[error("{0} may have been rounded as a JSON number; give it as a string, e.g. \"{0}\"")]
    Inexact(String),
    #[error("the amount is out of range")]
    Overflow,
    #[error("division by zero")]
    DivisionByZero,
}

impl Decimal {
    pub const ZERO: Decimal = Decimal(0);

    /// Parses `12`, `-3.5`, `0.00012345` (no exponents, no separators).
    pub fn parse(text: &str) -> Result<Decimal, DecimalError> {
        let raw = text.trim();
        let malformed = || DecimalError::Malformed(raw.to_owned());
        let (negative, digits) = match raw.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, raw.strip_prefix('+').unwrap_or(raw)),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(malformed());
        }
        let frac = frac.trim_end_matches('0');
        if frac.len() > SCALE as usize {
            return Err(DecimalError::TooPrecise(raw.to_owned()));
        }
        let int = int.trim_start_matches('0');
        if int.len() > MAX_INT_DIGITS {
            return Err(DecimalError::TooLarge(raw.to_owned()));
        }
        let int_value: i128 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| malformed())?
        };
        let frac_value: i128 = if frac.is_empty() {
            0
        } else {
            let padded = format!("{frac:0<width$}", width = SCALE as usize);
            padded.parse().map_err(|_| malformed())?
        };
        let value = int_value * ONE + frac_value;
        Ok(Decimal(if negative { -value } else { value }))
    }

    /// A JSON number or numeric string. A fractional number with more than 15
    /// significant digits may already have been rounded by the JSON parser
    /// (a double), so it is refused — as are exponents — rather than stored.
    pub fn from_json(value: &serde_json::Value) -> Result<Decimal, DecimalError> {
        match value {
            serde_json::Value::Number(n) if n.is_f64() => {
                let text = n.to_string();
                let significant = text
                    .trim_start_matches(['-', '0', '.'])
                    .bytes()
                    .filter(u8::is_ascii_digit)
                    .count();
                if significant > 15 {
                    return Err(DecimalError::Inexact(text));
                }
                Decimal::parse(&text)
            }
            serde_json::Value::Number(n) => Decimal::parse(&n.to_string()),
            serde_json::Value::String(s) => Decimal::parse(s),
            other => Err(DecimalError::Malformed(other.to_string())),
        }
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    pub fn is_negative(self) -> bool {
        self.0 < 0
    }

    pub fn checked_add(self, other: Decimal) -> Result<Decimal, DecimalError> {
        self.0
            .checked_add(other.0)
            .map(Decimal)
            .ok_or(DecimalError::Overflow)
    }

    pub fn checked_sub(self, other: Decimal) -> Result<Decimal, DecimalError> {
        self.0
            .checked_sub(other.0)
            .map(Decimal)
            .ok_or(DecimalError::Overflow)
    }

    /// The product, rounded half away from zero to eight places.
    pub fn checked_mul(self, other: Decimal) -> Result<Decimal, DecimalError> {
        let wide = self.0.checked_mul(other.0).ok_or(DecimalError::Overflow)?;
        Ok(Decimal(round_div(wide, ONE)))
    }

    /// The quotient, rounded half away from zero to eight places.
    pub fn checked_div(self, other: Decimal) -> Result<Decimal, DecimalError> {
        if other.0 == 0 {
            return Err(DecimalError::DivisionByZero);
        }
        let wide = self.0.checked_mul(ONE).ok_or(DecimalError::Overflow)?;
        Ok(Decimal(round_div(wide, other.0)))
    }

    /// `self × num / den` in one step, rounded once (half away from zero):
    /// the share of a cost that goes with part of a holding.
    pub fn mul_div(self, num: Decimal, den: Decimal) -> Result<Decimal, DecimalError> {
        if den.0 == 0 {
            return Err(DecimalError::DivisionByZero);
        }
        let wide = self.0.checked_mul(num.0).ok_or(DecimalError::Overflow)?;
        Ok(Decimal(round_div(wide, den.0)))
    }

    /// `self / total` as a percentage with one decimal (0 when total is 0).
    pub fn percent_of(self, total: Decimal) -> f64 {
        if total.0 == 0 {
            return 0.0;
        }
        // Display only; the ledger itself never uses floats.
        (self.0 as f64 / total.0 as f64 * 1000.0).round() / 10.0
    }
}

fn round_div(n: i128, d: i128) -> i128 {
    let q = n / d;
    let r = n % d;
    if r.abs() * 2 >= d.abs() {
        q + if (n < 0) == (d < 0) { 1 } else { -1 }
    } else {
        q
    }
}

impl fmt::Display for Decimal {
    /// Plain digits, trailing zeros dropped: `1500`, `0.5`, `-3.25`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let int = abs / ONE as u128;
        let frac = abs % ONE as u128;
        if frac == 0 {
            return write!(f, "{sign}{int}");
        }
        let frac = format!("{frac:0width$}", width = SCALE as usize);
        write!(f, "{sign}{int}.{}", frac.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parses_and_prints_exactly() {
        for (input, shown) in [
            ("12", "12"),
            ("0.5", "0.5"),
            ("-3.250", "-3.25"),
            ("0.00012345", "0.00012345"),
            (".5", "0.5"),
            ("+7", "7"),
            ("000100.10", "100.1"),
        ] {
            assert_eq!(d(input).to_string(), shown, "{input}");
        }
        assert_eq!((d("0.1").checked_add(d("0.2")).unwrap()), d("0.3"));
    }

    #[test]
    fn refuses_what_it_cannot_hold_exactly() {
        for bad in ["", "-", ".", "1e5", "1,000", "abc", "1.2.3", "٣"] {
            assert!(
                matches!(Decimal::parse(bad), Err(DecimalError::Malformed(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            Decimal::parse("0.123456789"),
            Err(DecimalError::TooPrecise(_))
        ));
        assert!(matches!(
            Decimal::parse("1234567890123456789"),
            Err(DecimalError::TooLarge(_))
        ));
        assert!(matches!(
            Decimal::from_json(&serde_json::json!(1e-9)),
            Err(DecimalError::Malformed(_))
        ));
        assert_eq!(
            Decimal::from_json(&serde_json::json!(150.25)).unwrap(),
            d("150.25")
        );
        let long: serde_json::Value = serde_json::from_str("123456789012.12345678").unwrap();
        assert!(matches!(
            Decimal::from_json(&long),
            Err(DecimalError::Inexact(_))
        ));
        assert_eq!(
            Decimal::from_json(&serde_json::json!("123456789012.12345678")).unwrap(),
            d("123456789012.12345678")
        );
        assert_eq!(
            Decimal::from_json(&serde_json::json!(9007199254740993_u64)).unwrap(),
            d("9007199254740993"),
            "integers are exact"
        );
    }

    #[test]
    fn multiplies_and_divides_with_rounding() {
        assert_eq!(d("10").checked_mul(d("150.25")).unwrap(), d("1502.5"));
        assert_eq!(d("1").checked_div(d("3")).unwrap(), d("0.33333333"));
        assert_eq!(d("2").checked_div(d("3")).unwrap(), d("0.66666667"));
        assert_eq!(d("-2").checked_div(d("3")).unwrap(), d("-0.66666667"));
        assert_eq!(
            d("1").checked_div(Decimal::ZERO),
            Err(DecimalError::DivisionByZero)
        );
        let huge = d("999999999999999999");
        assert_eq!(huge.checked_mul(huge), Err(DecimalError::Overflow));
        assert_eq!(
            d("1000000").checked_mul(d("99999.99")).unwrap().to_string(),
            "99999990000"
        );
        assert_eq!(d("25").percent_of(d("200")), 12.5);
        // One rounding, not a rounded average multiplied back up.
        assert_eq!(
            d("2").mul_div(d("2999.99999999"), d("3000")).unwrap(),
            d("2")
        );
        assert_eq!(d("10").mul_div(d("1"), d("3")).unwrap(), d("3.33333333"));
    }
}
