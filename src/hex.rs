//! Lowercase hex, for digests and random ids.

use std::fmt::Write;

/// `bytes` as lowercase hex, two digits each.
pub(crate) fn encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_digits_per_byte() {
        assert_eq!(super::encode(&[0, 15, 255]), "000fff");
    }
}
