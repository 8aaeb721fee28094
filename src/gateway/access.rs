//! Who may talk to the agent: pairing, allowlist or open.

/// The access policy for unknown users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessPolicy {
    /// Unknown users get a one-time code the operator approves.
    Pairing,
    /// Only numeric ids in the platform's allowlist; empty admits nobody.
    Allowlist,
    /// Everyone.
    Open,
}
