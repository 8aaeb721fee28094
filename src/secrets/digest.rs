//! A shared token (`WEB_TOKEN`, `MCP_TOKEN`) held as its SHA-256 digest and
//! compared in constant time, so neither its length nor a prefix leaks
//! through timing.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use switchboard_platform::Secret;

/// The digest of a token; [`TokenDigest::matches`] checks an offered one.
#[derive(Clone)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    /// The digest of `token`.
    pub fn new(token: &Secret) -> TokenDigest {
        TokenDigest(Sha256::digest(token.expose().as_bytes()).into())
    }

    /// Whether `offered` is the token, compared in constant time (both sides
    /// are digests of equal length, whatever was offered).
    pub fn matches(&self, offered: &str) -> bool {
        let offered: [u8; 32] = Sha256::digest(offered.as_bytes()).into();
        bool::from(self.0.ct_eq(&offered))
    }

    /// The digest itself, for deriving keys from the token.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenDigest(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_token_itself_matches() {
        let digest = TokenDigest::new(&Secret::new("0123456789abcdef0123"));
        assert!(digest.matches("0123456789abcdef0123"));
        for wrong in ["", "0123456789abcdef012", "0123456789abcdef01234", "x"] {
            assert!(!digest.matches(wrong), "{wrong}");
        }
        assert!(!format!("{digest:?}").contains("0123"));
    }
}
