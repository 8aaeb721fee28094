//! How a memory's search terms are written in the index: each term carries
//! its owner's key (`telegram42x咖啡`), so one user's query only ever
//! matches that user's rows (see `memory_fts.rs`, which searches them).

use switchboard_platform::{Platform, UserId};

/// The owner's key as a term prefix: platform, user id, `x`.
pub(super) fn owner_prefix(platform: Platform, user: UserId) -> String {
    let id = user.0;
    let sign = if id < 0 { "n" } else { "" };
    format!("{}{sign}{}x", platform.as_str(), id.unsigned_abs())
}

/// The text stored in `memories.terms` for these search terms.
pub(crate) fn index_text(platform: Platform, user: UserId, terms: &[String]) -> String {
    let prefix = owner_prefix(platform, user);
    let mut out = String::with_capacity(terms.iter().map(|t| t.len() + prefix.len() + 1).sum());
    for term in terms.iter().filter(|t| is_plain(t)) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&prefix);
        out.push_str(term);
    }
    out
}

/// A term the `ascii` tokenizer keeps whole: no ASCII punctuation or space.
pub(super) fn is_plain(term: &str) -> bool {
    !term.is_empty()
        && term
            .chars()
            .all(|c| !c.is_ascii() || c.is_ascii_alphanumeric())
}
