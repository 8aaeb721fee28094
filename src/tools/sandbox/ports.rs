//! The gateway's own TCP ports kept from commands when the network is
//! allowed: a Landlock ruleset (ABI ≥ 4) built once at start that handles
//! TCP connect and bind and allows every port but those, enforced by each
//! command's process on top of its own filesystem ruleset (Landlock stacks
//! rulesets; what a process may do is what every one of them allows).
//!
//! Landlock network rules only allow: "every port but N" is one rule per
//! other port, 65,536 minus N. Building them costs ~60 ms, once; enforcing
//! them costs each command the kernel's copy of those rules into its new
//! domain (measured by `benches/sandbox_spawn.rs`).

use landlock::{
    AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetError,
};
use std::os::fd::OwnedFd;

/// The ruleset allowing TCP connect and bind on every port but `denied`, as
/// the descriptor the child passes to `landlock_restrict_self`.
pub(super) fn ruleset(denied: &[u16]) -> Result<OwnedFd, String> {
    build(denied)
        .map_err(|e| e.to_string())?
        // With a hard requirement, `create` has failed already when the
        // kernel lacks Landlock; no descriptor is the same failure.
        .ok_or_else(|| "this kernel has no Landlock".to_owned())
}

fn build(denied: &[u16]) -> Result<Option<OwnedFd>, RulesetError> {
    let access = AccessNet::ConnectTcp | AccessNet::BindTcp;
    let mut rs = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(access)?
        .create()?;
    for port in 0..=u16::MAX {
        if !denied.contains(&port) {
            (&mut rs).add_rule(NetPort::new(port, access))?;
        }
    }
    Ok(rs.into())
}
