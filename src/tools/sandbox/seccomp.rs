//! With the network off at the Landlock level, a seccomp filter refuses
//! the sockets Landlock does not govern: Unix sockets (PostgreSQL's, an SSH
//! agent's, D-Bus: Landlock checks no `connect` on a socket path), UDP and
//! every other Internet socket, and `io_uring` (which can open sockets past
//! the filter). Compiled once in the gateway, installed in the child.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Address families a command without network may not open a socket in.
const DENIED_FAMILIES: [libc::c_int; 3] = [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];

/// The filter: `socket()` in a denied family and `io_uring_setup()` fail
/// with `EACCES`; everything else is allowed. A process of another
/// architecture (a 32-bit binary) is killed by the filter's prologue.
pub(super) fn no_sockets() -> Result<BpfProgram, seccompiler::BackendError> {
    let family = |f: libc::c_int| -> Result<SeccompRule, seccompiler::BackendError> {
        SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::from(f.unsigned_abs()),
        )?])
    };
    let rules = BTreeMap::from([
        (
            libc::SYS_socket,
            DENIED_FAMILIES
                .iter()
                .map(|f| family(*f))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]);
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES.unsigned_abs()),
        arch,
    )?;
    filter.try_into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles_for_this_architecture() {
        let program = super::no_sockets();
        assert!(program.is_ok_and(|p| !p.is_empty()));
    }
}
