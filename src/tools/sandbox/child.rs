//! The only unsafe code of the crate: the work a confined command's process
//! does on itself between `fork` and `exec` (descriptors marked close-on-exec,
//! child subreaper, resource limits, capabilities dropped, the prepared seccomp
//! filter and Landlock rulesets enforced), and the one system call that reads the kernel's Landlock ABI.
//!
//! Why `pre_exec` rather than re-executing a launcher subcommand: the tools
//! live in the library, which also runs inside test binaries and other
//! embedders where `current_exe()` is not `switchboard`; and a launcher costs
//! a second `exec` of a large binary per command. Everything that allocates or
//! opens files (the ruleset, its path descriptors) is prepared in the parent;
//! the closure below only makes system calls.
#![allow(unsafe_code)]

use super::limits::Limits;
use landlock::{RestrictSelfError, RulesetCreated, RulesetError, RulesetStatus};
use std::io;
use std::os::fd::RawFd;

/// What the child applies to itself before `exec`.
pub(super) struct ChildSetup {
    pub limits: Limits,
    /// Enforced last; `None` for levels without Landlock.
    pub ruleset: Option<RulesetCreated>,
    /// A seccomp filter to install (the Landlock level).
    pub seccomp: Option<std::sync::Arc<seccompiler::BpfProgram>>,
    /// Drop every capability (a gateway running as root would otherwise hand
    /// them on: raising limits back, reading any file the rules allow).
    pub drop_capabilities: bool,
    /// A Landlock ruleset shared by every command (the protected ports),
    /// enforced after `ruleset`, stacked on it.
    pub ports: Option<RawFd>,
    /// Descriptors the program must inherit (what bwrap reads).
    pub inherit: Vec<RawFd>,
}

/// Installs `setup` to run in the command's process after `fork`, before `exec`.
pub(super) fn install(cmd: &mut tokio::process::Command, setup: ChildSetup) {
    let mut setup = Some(setup);
    // SAFETY: the closure runs in the forked child of a multi-threaded process,
    // where only async-signal-safe work is allowed. It allocates nothing and
    // takes no lock: `Option::take`, raw system calls (close_range, fcntl,
    // prctl, setrlimit, getrlimit, capset, seccomp, landlock_restrict_self)
    // and `close` of the ruleset descriptor when it is dropped; the list of
    // descriptors to keep is leaked, not freed; errors are `io::Error`s
    // built from an errno, which do not allocate.
    unsafe {
        cmd.pre_exec(move || match setup.take() {
            Some(setup) => apply(setup),
            None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        });
    }
}

fn apply(mut setup: ChildSetup) -> io::Result<()> {
    cloexec_from_3();
    let inherit = std::mem::take(&mut setup.inherit);
    let kept = keep_open(&inherit);
    // Freeing memory is not async-signal-safe: the list is leaked (this
    // process execs next, or exits).
    std::mem::forget(inherit);
    kept?;
    // Orphans of the command's descendants (double-forked daemons) become
    // its children rather than init's, so its tree can be killed whole.
    rustix::process::set_child_subreaper(rustix::process::Pid::from_raw(1))?;
    setup.limits.apply()?;
    if setup.drop_capabilities {
        let none = rustix::thread::CapabilitySet::empty();
        rustix::thread::set_capabilities(
            None,
            rustix::thread::CapabilitySets {
                effective: none,
                permitted: none,
                inheritable: none,
            },
        )?;
    }
    if let Some(program) = &setup.seccomp {
        match seccompiler::apply_filter(program) {
            Ok(()) => {}
            Err(seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e)) => return Err(e),
            Err(_) => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }
    if let Some(ruleset) = setup.ruleset {
        match ruleset.restrict_self() {
            // Fail closed: a ruleset the kernel did not enforce is an error.
            Ok(status) if status.ruleset == RulesetStatus::NotEnforced => {
                return Err(io::Error::from_raw_os_error(libc::ENOSYS))
            }
            Ok(_) => {}
            Err(RulesetError::RestrictSelf(
                RestrictSelfError::SetNoNewPrivsCall { source, .. }
                | RestrictSelfError::RestrictSelfCall { source, .. },
            )) => return Err(source),
            Err(_) => return Err(io::Error::from_raw_os_error(libc::EPERM)),
        }
    }
    if let Some(fd) = setup.ports {
        restrict_self(fd)?;
    }
    Ok(())
}

/// Clears close-on-exec on `fds`, so the program inherits them.
fn keep_open(fds: &[RawFd]) -> io::Result<()> {
    for fd in fds {
        // SAFETY: each was opened by the parent for this child and is kept
        // open by it until the child has been spawned.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(*fd) };
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    }
    Ok(())
}

/// Enforces the prepared Landlock ruleset `fd` on this process (after
/// `no_new_privs`, which Landlock requires of an unprivileged process). The
/// descriptor stays open: every command enforces the same one.
fn restrict_self(fd: RawFd) -> io::Result<()> {
    rustix::thread::set_no_new_privs(true)?;
    // SAFETY: landlock_restrict_self reads no memory of ours: a descriptor
    // and flags.
    let done = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Marks every descriptor from 3 up close-on-exec, whoever opened it (a C
/// library without `O_CLOEXEC`, a descriptor inherited by the gateway).
/// Kernels before 5.11 lack `CLOSE_RANGE_CLOEXEC`: then the descriptors' own
/// flags (every one Rust opens is close-on-exec) are all there is.
fn cloexec_from_3() {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC closes nothing; it sets a
    // flag on descriptors, so no live object is invalidated.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
    }
}

/// The kernel's Landlock ABI version; `None` when Landlock is not built in or
/// not enabled.
pub(super) fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the
    // call reads no memory and only returns a number (or -1 and errno).
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}
