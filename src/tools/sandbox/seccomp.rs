//! The seccomp filter of every confined command: `io_uring` refused at every
//! level and setting (it performs operations, sockets included, past this
//! filter), and `socket()` refused for what Landlock or the namespaces do not
//! govern. Compiled once in the gateway; installed by the child itself at the
//! Landlock level, by `bwrap` (`--seccomp FD`) just before it runs the
//! command at the bwrap level.
//!
//! | level | network | `socket()` refused for |
//! | --- | --- | --- |
//! | landlock | none | every family |
//! | landlock, bwrap | allow | `AF_UNIX` (Landlock checks no `connect` to a socket path: PostgreSQL's, Docker's; `socketpair` stays) |
//! | bwrap | none | every family but `AF_UNIX` (the command's own network namespace; `AF_VSOCK` is not namespaced) |

use super::Network;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Which level installs the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Installer {
    Landlock,
    Bwrap,
}

/// On x86_64, the x32 system calls: the same numbers with this bit set.
/// Kernels built with x32 support run them for native processes, so each
/// refused call is refused under both numbers.
const X32_BIT: i64 = 0x4000_0000;

/// The filter: the calls above fail with `EACCES`; everything else is
/// allowed. A process of another architecture (a 32-bit binary) is killed by
/// the filter's prologue.
pub(super) fn program(
    installer: Installer,
    network: Network,
) -> Result<BpfProgram, seccompiler::BackendError> {
    let family = |op: SeccompCmpOp| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        let unix = u64::from(libc::AF_UNIX.unsigned_abs());
        Ok(vec![SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            op,
            unix,
        )?])?])
    };
    let socket = match (installer, network) {
        // No rule: refused whatever the arguments.
        (Installer::Landlock, Network::None) => Vec::new(),
        (Installer::Bwrap, Network::None) => family(SeccompCmpOp::Ne)?,
        (_, Network::Allow) => family(SeccompCmpOp::Eq)?,
    };
    let mut rules = BTreeMap::from([
        (libc::SYS_socket, socket),
        (libc::SYS_io_uring_setup, Vec::new()),
        (libc::SYS_io_uring_enter, Vec::new()),
        (libc::SYS_io_uring_register, Vec::new()),
    ]);
    if cfg!(target_arch = "x86_64") {
        let x32: Vec<(i64, Vec<SeccompRule>)> = rules
            .iter()
            .map(|(nr, r)| (nr | X32_BIT, r.clone()))
            .collect();
        rules.extend(x32);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES.unsigned_abs()),
        arch,
    )?;
    filter.try_into()
}

/// The program as `bwrap --seccomp` reads it: the `struct sock_filter`
/// array, in this machine's byte order.
pub(super) fn to_bytes(program: &BpfProgram) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for insn in program {
        out.extend_from_slice(&insn.code.to_ne_bytes());
        out.push(insn.jt);
        out.push(insn.jf);
        out.extend_from_slice(&insn.k.to_ne_bytes());
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_filter_compiles_for_this_architecture() {
        for installer in [Installer::Landlock, Installer::Bwrap] {
            for network in [Network::Allow, Network::None] {
                let program = program(installer, network).unwrap();
                assert!(!program.is_empty());
                assert_eq!(to_bytes(&program).len(), program.len() * 8);
            }
        }
    }
}
